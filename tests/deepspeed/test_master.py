"""DeepSpeedTrial under a real master: ``entrypoint: model_def:LinearTrial`` with one slot,
and the launcher form with two slots (DeepSpeed's runner, two CPU ranks, sharded checkpoints)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deepspeed")

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


LAUNCHER = (
    "python3 -m trialkit.launch.deepspeed -- python3 -m trialkit.exec.harness model_def:LinearTrial"
)


def _two_slots(**hparams: Any) -> dict[str, Any]:
    return _config(
        entrypoint=LAUNCHER,
        resources={"slots_per_trial": 2},
        hyperparameters={"ds": {"zero_optimization": {"stage": 2}}, **hparams},
        reproducibility={"experiment_seed": 5},
        min_checkpoint_period={"batches": 0},
        checkpoint_policy="none",
    )


def _final(master: Master, exp: int) -> dict[str, Any]:
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=300)
    trial = desc["trials"][0]
    assert desc["experiment"]["state"] == "COMPLETED", master.cli(
        "trial", "logs", str(trial["id"])
    ).stdout[-4000:]
    return trial  # type: ignore[no-any-return]


def test_two_slots_under_the_launcher_pause_and_resume_exactly(
    master: Master, tmp_path: Path
) -> None:
    model_dir = _model_dir(tmp_path)
    straight = _final(master, master.create(_two_slots(), model_dir))
    assert straight["restarts"] == 0
    exp = master.create(_two_slots(sleep=0.3), model_dir)

    def trained() -> int:
        got = master.client.request(
            "GET", f"/api/v1/trials/{straight['id'] + 1}/metrics", params={"group": "training"}
        )["metrics"]
        return max((m["steps_completed"] for m in got), default=0)

    master.wait_for(lambda: trained() >= 10, timeout=180, what="10 batches trained")
    master.cli("experiment", "pause", str(exp))
    master.wait_for(
        lambda: master.describe(exp)["trials"][0]["state"] == "PAUSED", timeout=120, what="PAUSED"
    )
    [paused] = master.describe(exp)["checkpoints"]
    assert 10 <= paused["steps_completed"] < 30
    files = set(paused["resources"])
    assert {"det_state_dict_rank0.pth", "det_state_dict_rank1.pth"} <= files, sorted(files)
    assert {f"model0/zero_pp_rank_{r}_mp_rank_00_optim_states.pt" for r in (0, 1)} <= files
    master.cli("experiment", "activate", str(exp))
    resumed = _final(master, exp)
    # Same trial seed, same data order, same weights: the same final validation loss.
    assert resumed["latest_validation"]["values"] == straight["latest_validation"]["values"]


def test_trial_class_entrypoint_with_two_slots(master: Master, tmp_path: Path) -> None:
    cfg = _two_slots()
    cfg["entrypoint"] = "model_def:LinearTrial"
    trial = _final(master, master.create(cfg, _model_dir(tmp_path)))
    assert trial["latest_validation"]["steps_completed"] == 30
    logs = master.cli("trial", "logs", str(trial["id"])).stdout
    assert "[rank=1]" in logs, logs[-3000:]


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the CPU-only message")
def test_fp16_without_a_gpu_is_one_line(master: Master, tmp_path: Path) -> None:
    cfg = _config(hyperparameters={"ds": {"fp16": {"enabled": True}}})
    desc = master.wait_state(master.create(cfg, _model_dir(tmp_path)), {"ERROR", "COMPLETED"})
    assert desc["experiment"]["state"] == "ERROR"
    logs = master.cli("trial", "logs", str(desc["trials"][0]["id"])).stdout
    line = "error: LinearTrial: the DeepSpeed config enables fp16, which needs a CUDA GPU"
    assert line in logs, logs[-3000:]
    assert "Traceback" not in logs, logs[-3000:]


def test_two_slots_without_a_launcher_is_one_line(master: Master, tmp_path: Path) -> None:
    cfg = _two_slots()
    cfg["entrypoint"] = "python3 -m trialkit.exec.harness model_def:LinearTrial"
    desc = master.wait_state(master.create(cfg, _model_dir(tmp_path)), {"ERROR", "COMPLETED"})
    assert desc["experiment"]["state"] == "ERROR"
    logs = master.cli("trial", "logs", str(desc["trials"][0]["id"])).stdout
    assert "error: this trial has 2 slots but was started without a launcher" in logs, logs
    assert "Traceback" not in logs, logs[-3000:]
