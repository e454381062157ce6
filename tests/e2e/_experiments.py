"""Small real experiments for the web UI's tests: a trial script reporting training and
validation metrics (and, asked to, profiler samples), its model directory as a fixture, a config
and a run to completion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..integration.conftest import Master, write_script

# Four reports of training "loss" and validation "val_loss" (lr / step: a trial's best is its
# last, and trials rank as their lr), with the progress counters the harnesses add; with
# PROFILE set, the Core API profiler's system samples first.
TRIAL = """
import os, time
import trialkit as det
from trialkit import core

hp = det.get_cluster_info().trial.hparams
with core.init() as ctx:
    if os.environ.get("PROFILE"):  # a report of 2 samples every 0.2 s, for about 1.5 s
        ctx.profiler.on(sampling_interval=0.1, samples_per_report=2)
        time.sleep(1.5)
    for step in range(1, 5):
        ctx.train.report_training_metrics(
            steps_completed=step * 8, metrics={"loss": 2 * hp["lr"] / step, "batches": step * 8}
        )
        ctx.train.report_validation_metrics(
            steps_completed=step * 8, metrics={"val_loss": hp["lr"] / step, "batches": step * 8}
        )
"""

#: Markup in user-controlled strings: drawn as text, never run.
XSS = "<img src=x onerror=window.__xss=1>"


def config(
    name: str, hparams: dict[str, Any], searcher: dict[str, Any], **more: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "entrypoint": "python3 trial.py",
        "hyperparameters": hparams,
        "searcher": {"metric": "val_loss", "max_length": 32, **searcher},
        "max_restarts": 0,
        **more,
    }


@pytest.fixture
def model(tmp_path: Path) -> Path:
    """The model directory of every experiment here: TRIAL as trial.py."""
    write_script(tmp_path / "model", "trial.py", TRIAL)
    return tmp_path / "model"


def run_experiment(master: Master, model: Path, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Create the experiment, wait for it to complete; its trials (by id)."""
    exp = master.create(config, model)
    described = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=120)
    assert described["experiment"]["state"] == "COMPLETED", described["experiment"]
    return sorted(described["trials"], key=lambda t: t["id"])
