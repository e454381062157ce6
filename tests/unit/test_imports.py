"""``import trialkit`` stays light: every worker of a distributed trial pays for it at start-up,
so the HTTP client and the store are imported only by the backend that needs them."""

from __future__ import annotations

import subprocess
import sys


def test_import_trialkit_pulls_in_neither_httpx_nor_sqlalchemy() -> None:
    code = (
        "import sys, trialkit, trialkit.core\n"
        "print(sorted(m for m in ('httpx', 'sqlalchemy', 'fastapi', 'torch') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
