"""``stop_master`` stops a master that no longer answers, and nothing else."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from trialkit.client import master_file, stop_master
from trialkit.rendezvous import free_port


def _fake_master(home: Path, *argv: str) -> subprocess.Popen[bytes]:
    """A process that never answers HTTP, named in home's master file (with ``argv`` after the
    interpreter's ``-c`` program, as its command line)."""
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *argv])
    info = {"url": f"http://127.0.0.1:{free_port()}", "token": "t", "pid": proc.pid, "port": 1}
    master_file(home).write_text(json.dumps(info))
    return proc


def test_a_master_that_does_not_answer_is_stopped_by_signal(tmp_path: Path) -> None:
    # A benchmark's master busy with 200 trials answered no health check within 2 s, and
    # stop_master left it (and its trials) running.
    home = tmp_path / "home"
    proc = _fake_master(home, "-m", "trialkit.master", "--home", str(home))
    try:
        t0 = time.monotonic()
        assert stop_master(home, wait=10) is True
        assert proc.wait(timeout=10) is not None and time.monotonic() - t0 < 20
    finally:
        proc.kill()


def test_a_stale_master_file_naming_another_process_signals_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = _fake_master(home)  # not a master: its pid only reused in a stale file
    try:
        assert stop_master(home, wait=1) is False
        assert proc.poll() is None
    finally:
        proc.kill()
