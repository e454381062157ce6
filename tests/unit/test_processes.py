"""TrialProcess signalling against real processes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from trialkit.master._processes import TrialProcess


def test_signalling_a_run_whose_setsid_child_just_exited_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`e kill` raced a tagged process that left the group and exited between being listed and
    being signalled: ProcessLookupError from getpgid reached the API as a 500."""
    run = TrialProcess.spawn(
        trial_id=1,
        experiment_id=1,
        run_id=1,
        log_offset=0,
        argv=[sys.executable, "-c", "import time; time.sleep(60)"],
        env={},
        cwd=tmp_path,
        exit_file=tmp_path / "run-1.exit",
        log_file=tmp_path / "output.log",
        tag="test:1:1",
    )
    gone = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    listed = psutil.Process(gone.pid)
    gone.wait(timeout=30)  # exited and reaped: its pid no longer exists
    monkeypatch.setattr(run, "leftovers", lambda **_: [listed])
    try:
        run.signal_group(signal.SIGTERM)  # must not raise
        deadline = time.monotonic() + 30
        while run.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not run.alive(), "the run's own group did not get the signal"
    finally:
        run.signal_group(signal.SIGKILL)
