"""Pause/activate, kill, crash-and-restart, InvalidHP and a master killed with SIGKILL, each with
real trial processes supervised by a real master."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from trialkit.client import start_background
from trialkit.store import Store

from .conftest import Master, write_script

pytestmark = pytest.mark.integration

# A Core API trial: counts to TOTAL, checkpointing every 5 steps, resuming from its latest
# checkpoint, honouring preemption, and crashing on demand (CRASH_RUNS: runs that fail at step 7).
TRIAL = """
import json, os, sys, time
import trialkit as det
from trialkit import core

TOTAL = int(os.environ.get("TOTAL", "40"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0.05"))
CRASH_RUNS = {int(r) for r in os.environ.get("CRASH_RUNS", "").split(",") if r}

info = det.get_cluster_info()
run_id = info.trial.trial_run_id
with core.init() as ctx:
    step = 0
    if info.latest_checkpoint:
        with ctx.checkpoint.restore_path(info.latest_checkpoint) as path:
            step = json.loads((path / "state.json").read_text())["step"]
    print(f"run {run_id} starts at step {step}", flush=True)
    while step < TOTAL:
        time.sleep(STEP_SECONDS)
        step += 1
        ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
        if run_id in CRASH_RUNS and step == 7 + 5 * (run_id - 1):
            print(f"run {run_id} crashing at step {step}", flush=True)
            sys.exit(3)
        if step % 5 == 0:
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _):
                (path / "state.json").write_text(json.dumps({"step": step}))
            if ctx.preempt.should_preempt():
                print(f"run {run_id} preempted at step {step}", flush=True)
                sys.exit(0)
    ctx.train.report_validation_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    print(f"run {run_id} done", flush=True)
"""


def _config(**env: object) -> dict:
    return {
        "name": "lifecycle",
        "entrypoint": "python3 trial.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 40}},
        "max_restarts": env.pop("max_restarts", 0),
        "environment": {"environment_variables": [f"{k}={v}" for k, v in env.items()]},
    }


def _logs(master: Master, trial_id: int) -> list[str]:
    return [
        ln["line"] for ln in master.client.request("GET", f"/api/v1/trials/{trial_id}/logs")["logs"]
    ]


def _training_steps(master: Master, trial_id: int) -> list[int]:
    metrics = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": "training"}
    )["metrics"]
    return [m["steps_completed"] for m in metrics]


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    write_script(d, "trial.py", TRIAL)
    return d


def test_pause_then_activate_resumes_from_checkpoint(master: Master, model_dir: Path) -> None:
    # 150 steps of 0.05 s: the pause lands before the end even when the CLI starts slowly
    exp = master.create(_config(TOTAL=150, STEP_SECONDS=0.05), model_dir)
    master.wait_for(
        lambda: any(s >= 10 for s in _training_steps(master, 1)), what="two checkpoints"
    )
    master.cli("experiment", "pause", str(exp))
    desc = master.wait_for(
        lambda: master.describe(exp)["trials"][0]["state"] == "PAUSED", what="trial PAUSED"
    ) or master.describe(exp)
    assert desc["experiment"]["state"] == "PAUSED"
    assert desc["trials"][0]["pid"] is None
    paused_at = max(c["steps_completed"] for c in desc["checkpoints"])
    master.cli("experiment", "activate", str(exp))
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"})
    assert desc["experiment"]["state"] == "COMPLETED"
    trial = desc["trials"][0]
    assert trial["run_id"] == 2 and trial["restarts"] == 0
    logs = _logs(master, 1)
    assert any(f"preempted at step {paused_at}" in ln for ln in logs)
    assert any(f"run 2 starts at step {paused_at}" in ln for ln in logs)
    assert trial["latest_validation"]["steps_completed"] == 150


def test_kill_stops_trial_quickly(master: Master, model_dir: Path) -> None:
    exp = master.create(_config(TOTAL=100000, STEP_SECONDS=0.05), model_dir)
    master.wait_for(
        lambda: (
            master.describe(exp)["trials"] and master.describe(exp)["trials"][0]["pid"] is not None
        ),
        what="trial running",
    )
    pid = master.describe(exp)["trials"][0]["pid"]
    start = time.monotonic()
    master.cli("experiment", "kill", str(exp))
    desc = master.wait_state(exp, {"CANCELED"}, timeout=30)
    assert time.monotonic() - start < 15
    assert desc["trials"][0]["state"] == "CANCELED"
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_trial_that_crashes_twice_recovers_from_checkpoint(master: Master, model_dir: Path) -> None:
    exp = master.create(
        _config(TOTAL=30, STEP_SECONDS=0.01, CRASH_RUNS="1,2", max_restarts=2), model_dir
    )
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"})
    assert desc["experiment"]["state"] == "COMPLETED", desc
    trial = desc["trials"][0]
    assert trial["restarts"] == 2 and trial["run_id"] == 3
    logs = _logs(master, 1)
    assert any("run 1 crashing at step 7" in ln for ln in logs)
    assert any("run 2 starts at step 5" in ln for ln in logs)
    assert any("run 2 crashing at step 12" in ln for ln in logs)
    assert any("run 3 starts at step 10" in ln for ln in logs)
    assert trial["latest_validation"]["steps_completed"] == 30


def test_out_of_restarts_is_an_error(master: Master, model_dir: Path) -> None:
    exp = master.create(
        _config(TOTAL=30, STEP_SECONDS=0.01, CRASH_RUNS="1,2", max_restarts=1), model_dir
    )
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"})
    assert desc["experiment"]["state"] == "ERROR"
    assert desc["trials"][0]["state"] == "ERROR" and desc["trials"][0]["restarts"] == 1
    proc = master.cli(
        "experiment",
        "create",
        str(model_dir / "_config.json"),
        str(model_dir),
        "--follow",
        check=False,
    )
    assert proc.returncode == 1 and "ended ERROR" in proc.stdout


def test_invalid_hp_ends_trial_without_restart(master: Master, tmp_path: Path) -> None:
    d = tmp_path / "m"
    write_script(
        d,
        "t.py",
        "import trialkit\nfrom trialkit import core\nwith core.init():\n    raise trialkit.InvalidHP('lr too big')\nprint('after block', flush=True)\n",
    )
    exp = master.create(
        {
            "name": "ihp",
            "entrypoint": "python3 t.py",
            "searcher": {"name": "single", "metric": "x"},
            "max_restarts": 3,
        },
        d,
    )
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"})
    trial = desc["trials"][0]
    assert desc["experiment"]["state"] == "COMPLETED"
    assert trial["early_exit"] == "INVALID_HP" and trial["restarts"] == 0
    assert any("after block" in ln for ln in _logs(master, trial["id"]))


def test_master_killed_mid_experiment_is_picked_up_without_losing_metrics(
    master: Master, model_dir: Path
) -> None:
    exp = master.create(_config(TOTAL=80, STEP_SECONDS=0.05), model_dir)
    master.wait_for(lambda: len(_training_steps(master, 1)) >= 5, what="first metrics")
    trial_pid = master.describe(exp)["trials"][0]["pid"]
    os.kill(master.pid(), signal.SIGKILL)
    time.sleep(1.0)  # the trial keeps training (and retrying its reports) with no master
    os.killpg(trial_pid, 0)  # still alive
    master.client = start_background(master.home, slots=2)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"})
    assert desc["experiment"]["state"] == "COMPLETED"
    trial = desc["trials"][0]
    assert trial["run_id"] == 1 and trial["restarts"] == 0  # adopted, not restarted
    assert sorted(_training_steps(master, 1)) == list(range(1, 81))  # no report lost or doubled
    assert any("run 1 done" in ln for ln in _logs(master, 1))


def test_local_mode_run_is_listed(master: Master, tmp_path: Path) -> None:
    import subprocess
    import sys

    from .conftest import EXAMPLES

    subprocess.run(
        [sys.executable, str(EXAMPLES / "core_api" / "1_metrics.py")],
        env=master.env,
        check=True,
        timeout=60,
        cwd=tmp_path,
    )
    store = Store.at(master.home)

    def local_runs() -> list[Any]:
        return [e for e in store.list_experiments() if e.unmanaged]

    # the master stores a run's journal on its next tick, which a loaded machine delays
    master.wait_for(
        lambda: [e.state.value for e in local_runs()] == ["COMPLETED"],
        what="the local run stored as COMPLETED",
    )
    [exp] = local_runs()
    assert exp.name == "local: 1_metrics.py"
    [trial] = store.list_trials(exp.id)
    assert store.count_metrics(trial.id, "training") == 10
    listed = master.cli("experiment", "list", "--json").stdout
    assert "local: 1_metrics.py" in listed


def test_pause_terminates_a_trial_that_ignores_it(master: Master, tmp_path: Path) -> None:
    d = tmp_path / "m"
    write_script(
        d,
        "t.py",
        "import time\nfor i in range(600):\n    time.sleep(0.05)\nprint('finished', flush=True)\n",
    )
    exp = master.create(
        {
            "name": "stubborn",
            "entrypoint": "python3 t.py",
            "searcher": {"name": "single", "metric": "x"},
            "preemption_timeout": 1,
        },
        d,
    )
    master.wait_for(
        lambda: (
            master.describe(exp)["trials"] and master.describe(exp)["trials"][0]["pid"] is not None
        ),
        what="trial running",
    )
    master.cli("experiment", "pause", str(exp))
    master.wait_for(
        lambda: master.describe(exp)["trials"][0]["state"] == "PAUSED",
        timeout=20,
        what="trial PAUSED",
    )
    trial = master.describe(exp)["trials"][0]
    assert trial["pid"] is None and trial["restarts"] == 0


def test_master_stops_promptly_while_a_trial_long_polls(master: Master, model_dir: Path) -> None:
    # A running trial keeps a preemption long poll open; shutdown must not wait for it (nor
    # leave the master to be SIGKILLed after stop_master's 15 s).
    from trialkit.client import stop_master

    master.create(_config(TOTAL=400, STEP_SECONDS=0.05), model_dir)
    master.wait_for(lambda: len(_training_steps(master, 1)) >= 3, what="first metrics")
    t0 = time.monotonic()
    stop_master(master.home)
    took = time.monotonic() - t0
    assert took < 10, f"stop_master took {took:.1f}s"
    assert "Traceback" not in (master.home / "master.log").read_text()
