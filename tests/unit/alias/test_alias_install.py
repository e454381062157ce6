"""``trialkit alias install``: the opt-in alias for interpreters trialkit did not start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import paths

SRC = paths.SRC


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "TRIALKIT_DETERMINED_ALIAS"}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**base, "PYTHONPATH": str(SRC), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _trialkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trialkit.cli", *args],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_install_then_uninstall_in_a_site_dir(tmp_path: Path) -> None:
    site_dir = tmp_path / "site-packages"
    use_site = f"import site; site.addsitedir({str(site_dir)!r}); "
    before = _python(use_site + "import determined")
    assert "No module named 'determined'" in before.stderr

    proc = _trialkit("alias", "install", "--target", str(site_dir))
    assert proc.returncode == 0 and f"installed the determined alias in {site_dir}" in proc.stdout
    # site processes the .pth exactly as at interpreter start for a real site-packages.
    after = _python(
        use_site + "import determined as det, trialkit.core; print(det.core is trialkit.core)"
    )
    assert after.returncode == 0, after.stderr
    assert after.stdout.strip() == "True"
    off = _python(use_site + "import determined", env={"TRIALKIT_DETERMINED_ALIAS": "0"})
    assert "No module named 'determined'" in off.stderr

    proc = _trialkit("alias", "uninstall", "--target", str(site_dir))
    assert proc.returncode == 0 and "removed the determined alias" in proc.stdout
    assert list(site_dir.iterdir()) == []
    again = _python(use_site + "import determined")
    assert "No module named 'determined'" in again.stderr
