"""DeepSpeedTrial under a real master: ``entrypoint: model_def:LinearTrial`` with one slot,
and the launcher form with two slots (DeepSpeed's runner, two CPU ranks, sharded checkpoints)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Master

pytestmark = pytest.mark.integration
HERE = Path(__file__).resolve().parent


def _model_dir(tmp_path: Path) -> Path:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    shutil.copy(HERE / "ds_trials.py", model_dir / "model_def.py")
    return model_dir


def _config(**changes: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "name": "ds-linear",
        "entrypoint": "model_def:LinearTrial",
        "hyperparameters": {"ds": {}},
        "searcher": {
            "name": "single",
            "metric": "val_loss",
            "max_length": {"batches": 30},
            "smaller_is_better": True,
        },
        "min_validation_period": {"batches": 10},
        "min_checkpoint_period": {"batches": 15},
        "max_restarts": 0,
    }
    cfg.update(changes)
    return cfg


def _files(master: Master, uuid: str) -> set[str]:
    ckpt = master.client.request("GET", f"/api/v1/checkpoints/{uuid}")
    return set(ckpt["resources"])


def test_one_slot_trains_validates_and_checkpoints(master: Master, tmp_path: Path) -> None:
    exp = master.create(_config(), _model_dir(tmp_path))
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
    assert desc["experiment"]["state"] == "COMPLETED", master.cli("trial", "logs", "1").stdout
    [trial] = desc["trials"]
    val = trial["latest_validation"]
    assert val["steps_completed"] == 30 and val["values"]["val_loss"] < 5
    assert val["values"]["records"] == 30 * 4
    files = _files(master, trial["latest_checkpoint"])
    assert {"det_state_dict_rank0.pth", "trial_state.pkl", "load_data.json"} <= files
    assert "model0/mp_rank_00_model_states.pt" in files, sorted(files)
