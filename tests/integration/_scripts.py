"""A small experiment several suites run on a real master: two trials that each report a
training and a validation metric, save a checkpoint, and leave a copy of their environment in
their model directory (env.json)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .conftest import Master, write_script

TRIAL = """
import json, os
from trialkit import core

with open("env.json", "w") as f:
    json.dump(dict(os.environ), f)
with core.init() as ctx:
    ctx.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
    with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, _):
        (path / "state.json").write_text("{}")
    ctx.train.report_validation_metrics(steps_completed=1, metrics={"loss": 1.0})
"""

CONFIG = {
    "name": "two-trials",
    "entrypoint": "python3 trial.py",
    "hyperparameters": {"x": {"type": "categorical", "vals": [1, 2]}},
    "searcher": {"name": "grid", "metric": "loss", "max_length": {"batches": 1}},
    "max_restarts": 0,
}


def run_two_trials(master: Master, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    """Run TRIAL under CONFIG to the end; (experiment id, its description), checked COMPLETED."""
    model = tmp_path / "model"
    write_script(model, "trial.py", TRIAL)
    exp = master.create(CONFIG, model)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=180)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    return exp, desc
