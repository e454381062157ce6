"""``trialkit master up --foreground``: the CLI process becomes the master (``python -m
trialkit.master`` replaces it: same pid, terminal and signals), so the CLI itself never imports
the service. The CLI's other master commands find it through the master file. SIGTERM or
Ctrl-C stop it cleanly: its cleanup runs (the token leaves the master file), no traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from .conftest import Master

TRIALKIT = [sys.executable, "-m", "trialkit.cli"]

pytestmark = pytest.mark.integration


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TRIALKIT, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TRIALKIT_HOME": str(home)},
        check=True,
    )


def _status(home: Path) -> dict[str, Any]:
    return dict(json.loads(_cli(home, "master", "status", "--json").stdout))


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_master_up_foreground_runs_the_master_in_the_cli_process(
    tmp_path: Path, stop: signal.Signals
) -> None:
    home = tmp_path / "home"
    proc = subprocess.Popen(
        [*TRIALKIT, "master", "up", "--foreground", "--slots", "2", "--idle-timeout", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TRIALKIT_HOME": str(home)},
    )
    try:
        deadline = time.monotonic() + 60
        status = _status(home)
        while not status["running"] and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            status = _status(home)
        assert status["running"], proc.stderr.read() if proc.poll() is not None else status
        assert status["pid"] == proc.pid, "the master is not the process the CLI started as"
        assert status["slots"] == 2 and status["idle_timeout_seconds"] == 0
        assert "master running at" in _cli(home, "master", "status").stdout
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "master listening on http://127.0.0.1:" in err and "with 2 slots" in err
    assert "Traceback" not in err
    assert _status(home)["running"] is False
    assert json.loads((home / "master.json").read_text())["token"] == "", "cleanup did not run"


def test_a_master_that_does_not_answer_is_not_joined_by_a_second_one(
    master: Master,
) -> None:
    # A stalled master (stopped here; before: hung in a searcher call) answered no health
    # check, so the next command started a second master on the same home, which adopted the
    # first one's trials beside it. Now the second one exits at once naming the first.
    first = master.pid()
    os.kill(first, signal.SIGSTOP)
    try:
        listed = master.cli("experiment", "list", check=False, timeout=90)
        assert listed.returncode != 0
        assert f"another master is running for {master.home} (pid {first})" in listed.stderr
        masters = [
            p.pid
            for p in psutil.process_iter(["cmdline"])
            if "trialkit.master" in (p.info["cmdline"] or [])
            and str(master.home) in (p.info["cmdline"] or [])
        ]
        assert masters == [first], masters
    finally:
        os.kill(first, signal.SIGCONT)
    assert master.cli("experiment", "list").returncode == 0  # the first one again
    assert master.pid() == first
