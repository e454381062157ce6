"""PyTorchTrial under the master: seed 004's MNIST port as ``entrypoint: model_def:MNistTrial``
with single and adaptive_asha searches, 0.38 time_metric configs, and a bad Trial."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

torch = pytest.importorskip("torch")

from .conftest import EXAMPLES, Master, write_script  # noqa: E402

pytestmark = pytest.mark.integration
MNIST = EXAMPLES / "mnist_pytorch"


def _config(name: str, **changes: Any) -> dict[str, Any]:
    cfg = yaml.safe_load((MNIST / name).read_text())
    for dotted, value in changes.items():
        node = cfg
        *parents, leaf = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return cfg


def _model_dir(tmp_path: Path) -> Path:
    """A copy of the example (creating an experiment writes its config into the model dir)."""
    return Path(shutil.copytree(MNIST, tmp_path / "mnist_pytorch"))


def _run(
    master: Master, cfg: dict[str, Any], model_dir: Path, timeout: float = 150
) -> dict[str, Any]:
    exp = master.create(cfg, model_dir)
    return master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=timeout)


def test_const_trains_validates_and_checkpoints_in_determined_layout(
    master: Master, tmp_path: Path
) -> None:
    cfg = _config("const.yaml", searcher__max_length={"batches": 40}, min_validation_period={"batches": 20},
                  min_checkpoint_period={"batches": 15}, perform_initial_validation=True)  # fmt: skip
    desc = _run(master, cfg, _model_dir(tmp_path))
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    val = trial["latest_validation"]
    assert val["steps_completed"] == 40
    assert val["values"]["batches"] == 40 and val["values"]["records"] == 40 * 64
    assert 0 <= val["values"]["accuracy"] <= 1
    vals = master.client.request(
        "GET", f"/api/v1/trials/{trial['id']}/metrics", params={"group": "validation"}
    )
    assert [m["steps_completed"] for m in vals["metrics"]] == [0, 20, 40]  # initial + period
    ckpts = sorted(desc["checkpoints"], key=lambda c: c["steps_completed"])
    # min_checkpoint_period 15 (15, 30) plus "best" after validations that improved (20, 40);
    # checkpoint storage keeps the trial's best and latest.
    assert ckpts[-1]["steps_completed"] == 40
    files = set(ckpts[-1]["resources"])
    for name in (
        "state_dict.pth",
        "trial_state.pkl",
        "load_data.json",
        "metadata.json",
        "code/model_def.py",
    ):
        assert name in files, files
    out = tmp_path / "ckpt"
    master.cli("checkpoint", "download", ckpts[-1]["uuid"], "--output-dir", str(out))
    state = torch.load(out / "state_dict.pth", weights_only=False)
    assert set(state) >= {
        "models_state_dict",
        "optimizers_state_dict",
        "lr_schedulers_state_dict",
        "callbacks",
        "rng_state",
    }
    assert set(state["rng_state"]) >= {"cpu_rng_state", "np_rng_state", "random_rng_state"}
    load_data = json.loads((out / "load_data.json").read_text())
    assert load_data["trial_cls_spec"] == "model_def:MNistTrial" and "is_trainer" not in load_data
    assert load_data["hparams"]["global_batch_size"] == 64
    # Inference with no master: the checkpoint rebuilds its own Trial from code/.
    from trialkit import pytorch

    restored = pytorch.load_trial_from_checkpoint_path(out)
    images, labels = next(iter(restored.build_validation_data_loader()))
    restored.model.eval()
    with torch.no_grad():
        acc = (restored.model(images).argmax(1) == labels).float().mean().item()
    assert acc == pytest.approx(val["values"]["accuracy"], abs=0.15)


def test_adaptive_asha_search_runs_to_completion(master: Master, tmp_path: Path) -> None:
    cfg = _config("adaptive.yaml", searcher__max_trials=4, searcher__max_length={"batches": 32})
    desc = _run(master, cfg, _model_dir(tmp_path), timeout=240)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    trials = desc["trials"]
    assert len(trials) == 4 and all(t["state"] == "COMPLETED" for t in trials)
    lengths = sorted(t["latest_validation"]["steps_completed"] for t in trials)
    assert lengths[-1] == 32 and lengths[0] < 32  # promoted vs. stopped at a lower rung
    for t in trials:

        def steps(group: str, t: dict[str, Any] = t) -> list[int]:
            got = master.client.request(
                "GET", f"/api/v1/trials/{t['id']}/metrics", params={"group": group}
            )["metrics"]
            return [m["steps_completed"] for m in got]

        val_steps, train_steps = steps("validation"), steps("training")
        # One validation per rung reached; a relaunched trial continues from its checkpoint,
        # so training never goes back to an earlier step.
        assert (
            val_steps == sorted(set(val_steps))
            and val_steps[-1] == t["latest_validation"]["steps_completed"]
        )
        assert train_steps == sorted(set(train_steps))
        if val_steps[-1] == 32:
            assert len(val_steps) >= 2  # promoted through a lower rung


def test_0_38_time_metric_asha_reads_batches_from_validations(
    master: Master, tmp_path: Path
) -> None:
    searcher = {"name": "adaptive_asha", "metric": "validation_loss", "time_metric": "batches",
                "max_time": 16, "max_trials": 2, "max_concurrent_trials": 2, "max_rungs": 2}  # fmt: skip
    cfg = _config("adaptive.yaml", searcher=searcher, min_validation_period={"batches": 4})
    desc = _run(master, cfg, _model_dir(tmp_path), timeout=240)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    for t in desc["trials"]:
        values = t["latest_validation"]["values"]
        assert values["batches"] == t["latest_validation"]["steps_completed"]
        assert values["batches"] in (4, 8, 12, 16)
    assert max(t["latest_validation"]["steps_completed"] for t in desc["trials"]) == 16


BAD = """
import torch
from trialkit.pytorch import DataLoader, PyTorchTrial

class BadTrial(PyTorchTrial):
    def __init__(self, context):
        self.context = context
        self.model = torch.nn.Linear(2, 1)
    def build_training_data_loader(self):
        return DataLoader(torch.utils.data.TensorDataset(torch.zeros(4, 2)), batch_size=2)
    def build_validation_data_loader(self):
        return self.build_training_data_loader()
    def train_batch(self, batch, epoch_idx, batch_idx):
        return {}
    def evaluate_batch(self, batch):
        return {}
"""


def test_a_trial_without_wrap_model_fails_with_one_line(master: Master, tmp_path: Path) -> None:
    model_dir = tmp_path / "bad"
    write_script(model_dir, "model_def.py", BAD)
    cfg = {"entrypoint": "model_def:BadTrial", "searcher": {"name": "single", "metric": "x",
           "max_length": {"batches": 2}}, "max_restarts": 0}  # fmt: skip
    desc = _run(master, cfg, model_dir)
    assert desc["experiment"]["state"] == "ERROR"
    logs = master.cli("trial", "logs", str(desc["trials"][0]["id"])).stdout
    assert "error: BadTrial.__init__ did not call context.wrap_model(...)" in logs
    assert "Traceback" not in logs


SLOW = """
import time
import torch
from torch import nn
from trialkit.pytorch import DataLoader, PyTorchTrial

class SlowTrial(PyTorchTrial):
    def __init__(self, context):
        self.context = context
        self.model = context.wrap_model(nn.Linear(4, 1))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.01))
    def _data(self):
        g = torch.Generator().manual_seed(0)
        return torch.utils.data.TensorDataset(torch.randn(64, 4, generator=g), torch.randn(64, 1, generator=g))
    def build_training_data_loader(self):
        return DataLoader(self._data(), batch_size=4, shuffle=True)
    def build_validation_data_loader(self):
        return DataLoader(self._data(), batch_size=16)
    def train_batch(self, batch, epoch_idx, batch_idx):
        time.sleep(0.02)
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return loss
    def evaluate_batch(self, batch):
        x, y = batch
        return {"val_loss": nn.functional.mse_loss(self.model(x), y)}
"""


def test_pause_stops_at_a_batch_boundary_and_resumes_on_the_next_batch(
    master: Master, tmp_path: Path
) -> None:
    model_dir = tmp_path / "slow"
    write_script(model_dir, "model_def.py", SLOW)
    cfg = {"entrypoint": "model_def:SlowTrial", "hyperparameters": {"global_batch_size": 4},
           "searcher": {"name": "single", "metric": "val_loss", "max_length": {"batches": 150}},
           "scheduling_unit": 7, "max_restarts": 0}  # fmt: skip
    exp = master.create(cfg, model_dir)

    def training(run: int | None = None) -> list[dict[str, Any]]:
        got = master.client.request(
            "GET", "/api/v1/trials/1/metrics", params={"group": "training"}
        )["metrics"]
        return [m for m in got if run is None or m["run_id"] == run]

    master.wait_for(
        lambda: any(m["steps_completed"] >= 14 for m in training()), what="training metrics"
    )
    master.cli("experiment", "pause", str(exp))
    master.wait_for(
        lambda: master.describe(exp)["trials"][0]["state"] == "PAUSED", what="trial PAUSED"
    )
    desc = master.describe(exp)
    paused_at = max(c["steps_completed"] for c in desc["checkpoints"])
    assert 14 <= paused_at < 150
    # The trial stopped at the first batch boundary after the request, not at a reporting period.
    assert max(m["steps_completed"] for m in training(1)) == paused_at
    master.cli("experiment", "activate", str(exp))
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=120)
    assert desc["experiment"]["state"] == "COMPLETED"
    second = [m["steps_completed"] for m in training(2)]
    assert second and min(second) > paused_at and max(second) == 150
    logs = master.cli("trial", "logs", "1").stdout
    assert f"stopping at batch {paused_at}" in logs


TRAINER_SCRIPT = """
import logging
import trialkit
from trialkit import pytorch
from model_def import SlowTrial

logging.basicConfig(level=logging.INFO, format=trialkit.LOG_FORMAT)
info = trialkit.get_cluster_info()
with pytorch.init() as context:
    trial = SlowTrial(context)
    pytorch.Trainer(trial, context).fit(
        validation_period=pytorch.Batch(5), latest_checkpoint=info.latest_checkpoint
    )
"""


def test_trainer_api_script_under_the_master_follows_the_searcher(
    master: Master, tmp_path: Path
) -> None:
    model_dir = tmp_path / "trainer"
    write_script(model_dir, "model_def.py", SLOW.replace("time.sleep(0.02)", "pass"))
    write_script(model_dir, "train.py", TRAINER_SCRIPT)
    cfg = {"entrypoint": "python3 train.py", "hyperparameters": {"global_batch_size": 4},
           "searcher": {"name": "single", "metric": "val_loss", "max_length": {"records": 40}},
           "max_restarts": 0}  # fmt: skip
    desc = _run(master, cfg, model_dir)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    assert trial["latest_validation"]["steps_completed"] == 10  # 40 records / 4 per batch
    assert trial["latest_validation"]["values"]["records"] == 40
    last = max(desc["checkpoints"], key=lambda c: c["steps_completed"])
    out = tmp_path / "ckpt"
    master.cli("checkpoint", "download", last["uuid"], "--output-dir", str(out))
    assert json.loads((out / "load_data.json").read_text())["is_trainer"] is True


def test_distributed_yaml_trains_with_two_ddp_workers(master: Master, tmp_path: Path) -> None:
    cfg = _config("distributed.yaml", searcher__max_length={"batches": 20})
    desc = _run(master, cfg, _model_dir(tmp_path))
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    values = trial["latest_validation"]["values"]
    assert values["batches"] == 20 and values["records"] == 20 * 64  # 2 workers x 32
    logs = master.cli("trial", "logs", str(trial["id"])).stdout
    assert "torch_distributed --trial model_def:MNistTrial" in logs
