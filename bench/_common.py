"""Helpers the benchmarks share: the CLI path, a clean environment, a broken-run error."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


class BenchmarkBroken(RuntimeError):
    """The benchmark could not measure (lost data, create failed, no metric in time): exit non-zero."""


def cli_path() -> str:
    """The ``trialkit`` command of this interpreter's environment."""
    beside = Path(sys.executable).with_name("trialkit")
    return str(beside) if beside.exists() else shutil.which("trialkit") or "trialkit"


def clean_env(home: Path) -> dict[str, str]:
    """This environment without any trial context, pointed at ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DET_", "TRIALKIT_"))}
    env["TRIALKIT_HOME"] = str(home)
    return env
