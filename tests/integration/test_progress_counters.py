"""The batches/epochs/records counters the harnesses add to each report are progress, not
metrics: ``trialkit trial describe`` shows them in a progress column of their own and
``experiment describe`` leaves them out, while ``--json`` (and the API) keep them by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Master, write_script

pytestmark = pytest.mark.integration

# Reports as the harnesses do: every report carries the progress counters beside its metrics.
SCRIPT = """
from trialkit import core

with core.init() as ctx:
    counters = {"batches": 8, "epochs": 2, "records": 256}
    ctx.train.report_training_metrics(steps_completed=8, metrics={"loss": 0.5, **counters})
    ctx.train.report_validation_metrics(steps_completed=8, metrics={"val_acc": 0.75, **counters})
"""


def test_trial_describe_shows_the_counters_as_progress_not_metrics(
    master: Master, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    write_script(model, "work.py", SCRIPT)
    exp = master.create(
        {
            "name": "progress-counters",
            "entrypoint": "python3 work.py",
            "searcher": {"name": "single", "metric": "val_acc", "max_length": 8},
            "max_restarts": 0,
        },
        model,
    )
    master.wait_state(exp, {"COMPLETED"})
    trial = str(master.describe(exp)["trials"][0]["id"])

    out = master.cli("trial", "describe", trial, "--metrics").stdout
    for table in ("validations", "training"):
        lines = [line for line in out.split(table, 1)[1].splitlines() if line.strip()]
        assert "progress" in next(line for line in lines if "steps" in line), out
        row = next(line for line in lines if line.lstrip().startswith("8 "))
        metrics, progress = row.split("batches=", 1)
        assert "epochs" not in metrics and "records" not in metrics, out
        assert progress.startswith("8") and "epochs=2" in progress and "records=256" in progress
    assert "val_acc=0.75" in out and "loss=0.5" in out

    shown = master.cli("experiment", "describe", str(exp)).stdout
    assert "val_acc=0.75" in shown and "batches=" not in shown, shown

    desc = json.loads(master.cli("trial", "describe", trial, "--json").stdout)
    [val] = desc["validation_metrics"]
    assert val["values"] == {"val_acc": 0.75, "batches": 8, "epochs": 2, "records": 256}
