"""TrialProcess signalling against real processes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from trialkit.master.runs import _processes
from trialkit.master.runs._log_capture import LogCapture
from trialkit.master.runs._process_table import Supervisor
from trialkit.master.runs._processes import PROCESSES, ProcessTable, TrialProcess


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


def _spawn(tmp_path: Path, trial_id: int, code: str) -> TrialProcess:
    return TrialProcess.spawn(
        trial_id=trial_id,
        experiment_id=1,
        run_id=1,
        log_offset=0,
        argv=[sys.executable, "-c", code],
        env={},
        cwd=tmp_path,
        exit_file=tmp_path / f"run-{trial_id}.exit",
        log_file=tmp_path / f"output-{trial_id}.log",
        tag=f"{tmp_path}:{trial_id}:1",
    )


def test_a_process_environment_is_read_once_however_often_the_table_is_scanned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # When 200 trials ended together, each run's own scan read every process's environment:
    # ~15 s of the GIL, during which the metric stream waited.
    reads: list[tuple[int, float]] = []
    real = _processes._tag_of

    def counting(p: psutil.Process) -> str | None:
        reads.append((p.pid, p.create_time()))
        return real(p)

    monkeypatch.setattr(_processes, "_tag_of", counting)
    table = ProcessTable()
    first = table.scan()
    read_first = len(reads)
    table.scan()
    assert read_first >= len([e for e in first if not e.zombie]) > 0
    assert not set(reads[read_first:]) & set(reads[:read_first])


def _bare_supervisor(runs: list[TrialProcess], monkeypatch: pytest.MonkeyPatch) -> Supervisor:
    """A Supervisor of ``runs`` with only its process bookkeeping (logs and slots left out)."""
    supervisor = Supervisor.__new__(Supervisor)
    supervisor._procs = {r.trial_id: r for r in runs}
    supervisor._exits = []
    supervisor._slots = {}
    supervisor.logs = LogCapture.__new__(LogCapture)
    monkeypatch.setattr(LogCapture, "tail", lambda self, proc, final: True)
    monkeypatch.setattr(Supervisor, "release_slots", lambda self, slots, pool: None, raising=False)
    return supervisor


def test_a_tick_asks_once_whether_each_running_run_is_alive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engine reaps ten times a second: at 200 runs a second look was 2,000 more waitpid/s.
    run = _spawn(tmp_path, 1, "import time; time.sleep(60)")
    try:
        asked = []
        monkeypatch.setattr(run, "alive", lambda real=run.alive: asked.append(1) or real())
        assert _bare_supervisor([run], monkeypatch).reap() == []
        assert asked == [1]
    finally:
        run.signal_group(signal.SIGKILL)


def test_runs_ending_together_share_one_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = [_spawn(tmp_path, t, "pass") for t in (1, 2, 3)]
    left = _spawn(tmp_path, 4, "import os, time; os.setsid(); time.sleep(60)")  # leaves its group
    try:
        deadline = time.monotonic() + 30
        while any(r.alive() for r in runs) and time.monotonic() < deadline:
            time.sleep(0.05)
        scans = []
        monkeypatch.setattr(
            PROCESSES, "scan", lambda real=PROCESSES.scan: scans.append(1) or real()
        )
        ended = _bare_supervisor(runs, monkeypatch).reap()
        assert sorted(p.trial_id for p in ended) == [1, 2, 3] and scans == [1]
        # The scan still finds a run's process that left the group, by its tag.
        deadline = time.monotonic() + 30
        while not left.leftovers() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any(p.pid != left.pid for p in left.leftovers())
    finally:
        left.signal_group(signal.SIGKILL)
