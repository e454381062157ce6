"""A local-mode run (``python train.py`` with no master behind it) reaches the store through the
master (issue 34): a real master ingests its journal while it runs and after a restart, and
every report and checkpoint is stored exactly once; the run itself never loads SQLAlchemy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from trialkit.client import start_background, stop_master
from trialkit.store import Store

from .conftest import Master

SCRIPT = """
import sys, time
from pathlib import Path
from trialkit import core

go = Path(sys.argv[1])
with core.init() as ctx:
    ctx.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
    with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, _):
        (path / "w").write_text("1")
    while not go.exists():
        time.sleep(0.05)
    ctx.train.report_training_metrics(steps_completed=2, metrics={"loss": 0.5})
    ctx.train.report_validation_metrics(steps_completed=2, metrics={"loss": 0.5})
print("sqlalchemy loaded:", "sqlalchemy" in sys.modules)
"""


def test_a_local_run_is_stored_once_by_the_master_across_a_restart(
    master: Master, tmp_path: Path
) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    go = tmp_path / "go"
    env = {**master.env, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("TRIALKIT_CLUSTER_INFO", None)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(go)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The running master ingests the journal on its tick: the run is listed while it runs.
        master.wait_for(
            lambda: (
                [e.name for e in master.client.list_experiments().experiments]
                == ["local: train.py"]
            ),
            what="the local run listed",
        )
        [listed] = master.client.list_experiments().experiments
        master.wait_for(
            lambda: (
                len(
                    master.client.request("GET", f"/api/v1/experiments/{listed.id}/checkpoints")[
                        "checkpoints"
                    ]
                )
                == 1
            ),
            what="the local run's checkpoint",
        )
        assert master.describe(listed.id)["experiment"]["state"] == "ACTIVE"
        stop_master(master.home)  # the run goes on without a master ...
        go.touch()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out.strip() == "sqlalchemy loaded: False"
    # ... and the next master stores the rest of it at start.
    client = start_background(master.home, slots=2)
    try:
        described = client.describe_experiment(listed.id)
        assert described.experiment.state == "COMPLETED"
        listing = master.cli("experiment", "list").stdout
        assert "local: train.py" in listing, listing
    finally:
        client.close()
        stop_master(master.home)
    store = Store.for_home(master.home)
    try:
        [exp] = store.list_experiments()
        [trial] = store.list_trials(exp.id)
        assert [m.steps_completed for m in store.list_metrics(trial.id, "training")] == [1, 2]
        assert [m.steps_completed for m in store.list_metrics(trial.id, "validation")] == [2]
        assert [c.steps_completed for c in store.list_checkpoints(trial_id=trial.id)] == [1]
    finally:
        store.close()
    assert list((master.home / "local-runs").iterdir()) == []
