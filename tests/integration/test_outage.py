"""A checkpoint saved while the master is down for longer than the trial's retry window is
journaled by the trial and registered when the master is back: the relaunched trial resumes
from it, and it is listed."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from trialkit.client import start_background

from .conftest import Master, write_script

pytestmark = pytest.mark.integration

# Run 1 trains to step 3, waits for the test to take the master down, then saves a checkpoint
# (its registration fails after the 2 s retry window). Later runs resume from the latest one.
TRIAL = """
import json, os, pathlib, time
import trialkit as det
from trialkit import core

info = det.get_cluster_info()
run_id = info.trial.trial_run_id
go = pathlib.Path(os.environ["GO_FILE"])
with core.init() as ctx:
    step = 0
    if info.latest_checkpoint:
        with ctx.checkpoint.restore_path(info.latest_checkpoint) as path:
            step = json.loads((path / "state.json").read_text())["step"]
    print(f"run {run_id} starts at step {step}", flush=True)
    while step < 6:
        step += 1
        ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
        if step == 3 and run_id == 1:
            ctx.train.report_progress(0.5)
            print("waiting for the master to go away", flush=True)
            deadline = time.monotonic() + 120
            while not go.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _):
                (path / "state.json").write_text(json.dumps({"step": step}))
    ctx.train.report_validation_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    print(f"run {run_id} done", flush=True)
"""


def _logs(master: Master, trial_id: int) -> list[str]:
    resp = master.client.request("GET", f"/api/v1/trials/{trial_id}/logs", retry_for=30)
    return [ln["line"] for ln in resp["logs"]]


def _gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_checkpoint_saved_during_a_long_outage_is_registered_and_resumed(
    master: Master, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    write_script(model, "trial.py", TRIAL)
    go = tmp_path / "go"
    config = {
        "name": "outage",
        "entrypoint": "python3 trial.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 6}},
        "max_restarts": 1,
        "environment": {
            "environment_variables": [f"GO_FILE={go}", "TRIALKIT_MASTER_RETRY_SECONDS=2"]
        },
    }
    exp = master.create(config, model)
    master.wait_for(
        lambda: any("waiting for the master" in ln for ln in _logs(master, 1)),
        timeout=120,
        what="run 1 at step 3",
    )
    trial_pid = master.describe(exp)["trials"][0]["pid"]
    os.kill(master.pid(), signal.SIGKILL)
    go.touch()
    journal = master.home / "trials" / "1" / "unregistered-checkpoints"
    master.wait_for(lambda: any(journal.glob("*.json")), timeout=60, what="the journal entry")
    [entry_file] = journal.glob("*.json")
    uuid = json.loads(entry_file.read_text())["uuid"]
    time.sleep(3)  # the master stays away well past the trial's 2 s retry window
    master.client = start_background(master.home, slots=2)

    desc = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=180)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    trial = desc["trials"][0]
    assert trial["run_id"] == 2 and trial["restarts"] == 1
    assert _gone(trial_pid)
    logs = _logs(master, 1)
    assert any("will be registered when the master is back" in ln for ln in logs), logs
    assert any("run 2 starts at step 3" in ln for ln in logs), logs
    listed = master.cli("checkpoint", "list", str(exp)).stdout
    assert uuid in listed, listed
    ckpt = master.client.request("GET", f"/api/v1/checkpoints/{uuid}")
    assert ckpt["steps_completed"] == 3 and ckpt["resources"]["state.json"] > 0
    assert not any(journal.glob("*.json"))
