"""Multi-worker trials: 2 real worker processes per trial under the torch_distributed launcher,
supervised by a real master (collectives, a SIGKILLed worker, two trials at once, preemption,
sharded checkpoints)."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from trialkit.client import start_background, stop_master

from .conftest import Master, _kill_leftover_trials, write_script

pytest.importorskip("torch")
pytestmark = pytest.mark.integration

# Every step: an allgather all ranks check; every 5 steps a sharded checkpoint (one file per
# rank) and a preemption check. Resumes from the latest checkpoint, each rank restoring only
# its own file with a selector. Rank 1 writes its pid to PIDFILE at step PID_AT_STEP.
TRIAL = """
import json, os, sys, time
import trialkit as det
from trialkit import core

TOTAL = int(os.environ.get("TOTAL", "20"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0.05"))
PIDFILE = os.environ.get("PIDFILE")
PID_AT_STEP = int(os.environ.get("PID_AT_STEP", "7"))

info = det.get_cluster_info()
run_id = info.trial.trial_run_id
with core.init() as ctx:
    d = ctx.distributed
    assert (d.size, d.local_size, d.cross_size) == (2, 2, 1), (d.size, d.local_size)
    assert d.allgather(d.rank * 10) == [0, 10]
    assert d.allgather_local(d.local_rank) == [0, 1]
    assert d.gather(d.rank + 100) == ([100, 101] if d.rank == 0 else None)
    assert d.gather_local("x") == (["x", "x"] if d.rank == 0 else None)
    assert d.broadcast({"run": run_id} if d.rank == 0 else None) == {"run": run_id}
    assert d.broadcast_local("hi" if d.rank == 0 else None) == "hi"
    if os.environ.get("SYNC_DIR"):  # both trials must be running at once to get past here
        sync = os.environ["SYNC_DIR"]
        if d.rank == 0:
            open(os.path.join(sync, f"trial{info.trial.trial_id}"), "w").close()
            deadline = time.time() + 60
            while len(os.listdir(sync)) < int(os.environ["SYNC_N"]) and time.time() < deadline:
                time.sleep(0.05)
        assert d.broadcast(len(os.listdir(sync)) if d.rank == 0 else None) == int(os.environ["SYNC_N"])
    step = 0
    if info.latest_checkpoint:
        mine = f"rank{d.rank}.json"
        with ctx.checkpoint.restore_path(info.latest_checkpoint, selector=lambda p: p == mine) as path:
            state = json.loads((path / mine).read_text())
        assert state["rank"] == d.rank
        step = state["step"]
        # a selector download per rank: each rank fetches only its own shard
        dst = os.path.join(os.environ["TMPDIR_BASE"], f"dl-run{run_id}-rank{d.rank}")
        ctx.checkpoint.download(info.latest_checkpoint, dst, selector=lambda p: p == mine)
        assert sorted(os.listdir(dst)) == [mine], os.listdir(dst)
    print(f"rank {d.rank} run {run_id} starts at step {step}", flush=True)
    if os.environ.get("PIDDIR"):
        with open(os.path.join(os.environ["PIDDIR"], f"rank{d.rank}"), "w") as f:
            f.write(str(os.getpid()))
    while step < TOTAL:
        time.sleep(STEP_SECONDS)
        step += 1
        total = sum(d.allgather(step + d.rank))
        assert total == 2 * step + 1, total
        if d.rank == 1 and PIDFILE and step == PID_AT_STEP and run_id == 1:
            with open(PIDFILE + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.replace(PIDFILE + ".tmp", PIDFILE)
        if d.rank == 0:
            ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
        if step % 5 == 0:
            with ctx.checkpoint.store_path({"steps_completed": step}, shard=True) as (path, _):
                (path / f"rank{d.rank}.json").write_text(json.dumps({"rank": d.rank, "step": step}))
            if ctx.preempt.should_preempt():
                print(f"rank {d.rank} run {run_id} preempted at step {step}", flush=True)
                sys.exit(0)
    if d.rank == 0:
        ctx.train.report_validation_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    print(f"rank {d.rank} run {run_id} done", flush=True)
"""

LAUNCH = "python3 -m trialkit.launch.torch_distributed -- python3 trial.py"


def _config(name: str = "dist", max_restarts: int = 0, **env: object) -> dict:
    env.setdefault("TMPDIR_BASE", tempfile.mkdtemp(prefix="tk-dist-"))
    return {
        "name": name,
        "entrypoint": LAUNCH,
        "resources": {"slots_per_trial": 2},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 20}},
        "max_restarts": max_restarts,
        "environment": {"environment_variables": [f"{k}={v}" for k, v in env.items()]},
    }


def _logs(master: Master, trial_id: int) -> list[str]:
    return [
        ln["line"] for ln in master.client.request("GET", f"/api/v1/trials/{trial_id}/logs")["logs"]
    ]


def _has(lines: list[str], text: str) -> bool:
    return any(text in ln for ln in lines)


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    write_script(d, "trial.py", TRIAL)
    return d


@pytest.fixture
def master4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Master]:
    """A master with 4 CPU slots: room for two 2-worker trials at once."""
    home = tmp_path / "home4"
    monkeypatch.setenv("TRIALKIT_HOME", str(home))
    monkeypatch.delenv("TRIALKIT_CLUSTER_INFO", raising=False)
    client = start_background(home, slots=4)
    try:
        yield Master(home, client, {**os.environ, "TRIALKIT_HOME": str(home)})
    finally:
        client.close()
        stop_master(home)
        _kill_leftover_trials(home)


def test_two_workers_complete_with_rank_logs_and_sharded_checkpoints(
    master: Master, model_dir: Path
) -> None:
    exp = master.create(_config(TOTAL=10), model_dir)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=120)
    logs = _logs(master, 1)
    assert desc["experiment"]["state"] == "COMPLETED", "\n".join(logs[-40:])
    assert _has(logs, "[rank=0] || rank 0 run 1 done") and _has(
        logs, "[rank=1] || rank 1 run 1 done"
    )
    ckpts = desc["checkpoints"]
    assert sorted(c["steps_completed"] for c in ckpts) == [5, 10]
    for c in ckpts:  # every rank's shard is in the registered checkpoint
        assert {"rank0.json", "rank1.json", "metadata.json"} <= set(c["resources"])
    assert desc["trials"][0]["latest_validation"]["steps_completed"] == 10


def test_sigkilled_worker_fails_the_run_fast_and_the_trial_resumes(
    master: Master, model_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "rank1.pid"
    exp = master.create(
        _config(TOTAL=20, STEP_SECONDS=0.1, max_restarts=1, PIDFILE=pidfile, PID_AT_STEP=8),
        model_dir,
    )
    master.wait_for(pidfile.exists, timeout=90, what="rank 1 past step 8")
    os.kill(int(pidfile.read_text()), signal.SIGKILL)
    killed = time.monotonic()
    master.wait_for(
        lambda: master.describe(exp)["trials"][0]["restarts"] == 1,
        timeout=20,
        what="the run to end and a restart to be counted",
    )
    took = time.monotonic() - killed
    assert took < 5.0, f"the master saw the run end {took:.1f}s after the worker was killed"
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=120)
    logs = _logs(master, 1)
    assert desc["experiment"]["state"] == "COMPLETED", "\n".join(logs[-40:])
    assert _has(logs, "worker rank 1 was killed by signal 9")
    assert _has(logs, "rank 0 run 2 starts at step 5") and _has(
        logs, "rank 1 run 2 starts at step 5"
    )
    assert desc["trials"][0]["run_id"] == 2
    assert desc["trials"][0]["latest_validation"]["steps_completed"] == 20


def test_two_distributed_trials_at_once_do_not_clash(
    master4: Master, model_dir: Path, tmp_path: Path
) -> None:
    sync = tmp_path / "sync"
    sync.mkdir()
    exps = [
        master4.create(_config(name=f"d{i}", TOTAL=10, SYNC_DIR=sync, SYNC_N=2), model_dir)
        for i in range(2)
    ]
    for e in exps:
        desc = master4.wait_state(e, {"COMPLETED", "ERROR"}, timeout=150)
        trial = desc["trials"][0]
        logs = _logs(master4, trial["id"])
        assert desc["experiment"]["state"] == "COMPLETED", "\n".join(logs[-40:])
        assert trial["restarts"] == 0
        assert _has(logs, "[rank=1] || rank 1 run 1 done")
    assert len(list(sync.iterdir())) == 2


def test_pause_reaches_every_worker_and_activate_resumes(master: Master, model_dir: Path) -> None:
    exp = master.create(_config(TOTAL=40, STEP_SECONDS=0.1), model_dir)
    master.wait_for(
        lambda: _has(_logs(master, 1), "rank 1 run 1 starts"), timeout=90, what="workers started"
    )
    master.cli("experiment", "pause", str(exp))
    master.wait_for(
        lambda: master.describe(exp)["trials"][0]["state"] == "PAUSED",
        timeout=60,
        what="trial PAUSED",
    )
    logs = _logs(master, 1)
    stopped = [ln for ln in logs if "preempted at step" in ln]
    assert len(stopped) == 2, stopped  # both ranks saw it, at the same step
    step = int(stopped[0].rsplit(" ", 1)[1])
    assert _has(stopped, f"rank 0 run 1 preempted at step {step}")
    assert _has(stopped, f"rank 1 run 1 preempted at step {step}")
    master.cli("experiment", "activate", str(exp))
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=120)
    assert desc["experiment"]["state"] == "COMPLETED"
    assert _has(_logs(master, 1), f"rank 1 run 2 starts at step {step}")


def test_kill_ends_every_worker(master: Master, model_dir: Path, tmp_path: Path) -> None:
    piddir = tmp_path / "pids"
    piddir.mkdir()
    exp = master.create(_config(TOTAL=100000, STEP_SECONDS=0.05, PIDDIR=piddir), model_dir)
    master.wait_for(
        lambda: len(list(piddir.iterdir())) == 2, timeout=90, what="both workers running"
    )
    workers = [psutil.Process(int(p.read_text())) for p in piddir.iterdir()]
    master.cli("experiment", "kill", str(exp))
    desc = master.wait_state(exp, {"CANCELED"}, timeout=60)
    assert desc["trials"][0]["state"] == "CANCELED"
    # A SIGKILLed worker is over once it is a zombie: its parent (torchrun, itself killed) may not
    # have reaped it yet, and its exit teardown may still take a moment (seen in CI). A worker that
    # the kill missed would keep training for 100,000 steps, so a short wait cannot hide one.
    deadline = time.monotonic() + 5
    while _running(workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(workers) == []


def _running(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those of ``procs`` still running: same pid and start time, not a zombie."""
    out = []
    for p in procs:
        with contextlib.suppress(psutil.Error):
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
    return out
