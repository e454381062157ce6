"""Seed 003: ``TensorboardMode.AUTO`` (the default) writes the chief's reported metrics as event
files and uploads them to checkpoint storage, as ``upload_tensorboard_files`` does, after each
report, each checkpoint and at close (issue 32, 15f)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Master, write_script

pytestmark = pytest.mark.integration

SCRIPT = """
import determined as det
from determined import core

with core.init() as ctx:
    tb = ctx.train.get_tensorboard_path()
    (tb / "extra.txt").write_text("user file")  # the whole directory is synced, as Determined
    ctx.train.report_training_metrics(steps_completed=1, metrics={"loss": 0.5})
    with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, _):
        (path / "w").write_text("w")
    ctx.train.report_validation_metrics(steps_completed=2, metrics={"loss": 0.25})
"""


def test_auto_mode_uploads_event_files_to_checkpoint_storage(
    master: Master, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    write_script(model, "train.py", SCRIPT)
    storage = tmp_path / "storage"
    config = {
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": 2},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage)},
        "max_restarts": 0,
    }
    exp = master.create(config, model)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=60)
    trial = desc["trials"][0]["id"]
    assert desc["experiment"]["state"] == "COMPLETED", master.cli("t", "logs", str(trial)).stdout
    uploaded = storage / "tensorboard" / f"experiment-{exp}" / f"trial-{trial}"
    assert (uploaded / "extra.txt").read_text() == "user file"
    [events] = uploaded.glob("events.out.tfevents.*")
    data = events.read_bytes()
    # Both reports' scalars reached the uploaded copy (the final sync runs after the last one).
    assert b"loss" in data and b"val_loss" in data
