"""Warm start under the master: ``--warm-start UUID|PATH``, ``searcher.source_checkpoint_uuid``
and ``searcher.source_trial_id``. A warm-started trial's first batch sees the source's weights,
and its batch count starts at 0 (Determined's rule); bad sources fail at create in one line."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from .conftest import Master, write_script  # noqa: E402

pytestmark = pytest.mark.integration

# One weight, so "the weights the trial started from" is one number: each batch reports the
# weight it saw before its step (scheduling_unit 1: one training report per batch).
MODEL_DEF = """
import torch
from torch import nn
from trialkit.pytorch import DataLoader, PyTorchTrial

class Scalar(PyTorchTrial):
    def __init__(self, context):
        self.context = context
        self.model = context.wrap_model(nn.Linear(1, 1, bias=False))
        self.opt = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=context.get_hparam("lr")))
    def _data(self):
        x = torch.linspace(-1, 1, 32).unsqueeze(1)
        return torch.utils.data.TensorDataset(x, 3 * x)
    def build_training_data_loader(self):
        return DataLoader(self._data(), batch_size=4)
    def build_validation_data_loader(self):
        return DataLoader(self._data(), batch_size=32)
    def train_batch(self, batch, epoch_idx, batch_idx):
        seen = float(self.model.weight.detach())
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss, "w": seen}
    def evaluate_batch(self, batch):
        x, y = batch
        return {"val_loss": nn.functional.mse_loss(self.model(x), y)}
"""


def _config(batches: int, **searcher: Any) -> dict[str, Any]:
    return {
        "name": "warm",
        "entrypoint": "model_def:Scalar",
        "hyperparameters": {"global_batch_size": 4, "lr": 0.1},
        "searcher": {
            "name": "single",
            "metric": "val_loss",
            "max_length": {"batches": batches},
            **searcher,
        },  # fmt: skip
        "scheduling_unit": 1,
        "max_restarts": 0,
    }


def _model_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    write_script(d, "model_def.py", MODEL_DEF)
    return d


def _create(master: Master, cfg: dict[str, Any], model_dir: Path, *extra: str) -> Any:
    (model_dir / "_config.json").write_text(json.dumps(cfg))
    return master.cli("experiment", "create", *extra, str(model_dir / "_config.json"),
                      str(model_dir), check=False)  # fmt: skip


def _finish(master: Master, proc: Any) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    exp = int(proc.stdout.strip().split()[-1])
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=180)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    return desc


def _training(master: Master, desc: dict[str, Any]) -> list[dict[str, Any]]:
    [trial] = desc["trials"]
    got = master.client.request(
        "GET", f"/api/v1/trials/{trial['id']}/metrics", params={"group": "training"}
    )
    return list(got["metrics"])


def _final_weight(master: Master, desc: dict[str, Any]) -> float:
    """The weight in the experiment's last checkpoint, read from its state_dict.pth."""
    last = max(desc["checkpoints"], key=lambda c: c["steps_completed"])
    state = torch.load(master.home / "checkpoints" / last["uuid"] / "state_dict.pth",
                       weights_only=False)  # fmt: skip
    return float(state["models_state_dict"][0]["weight"])


def _assert_warm_started(master: Master, desc: dict[str, Any], weight: float, n: int) -> None:
    metrics = _training(master, desc)
    assert [m["steps_completed"] for m in metrics] == list(range(1, n + 1))  # counter from 0
    assert metrics[0]["values"]["w"] == pytest.approx(weight, abs=1e-6)
    assert max(c["steps_completed"] for c in desc["checkpoints"]) == n


@pytest.fixture
def source(master: Master, tmp_path: Path) -> dict[str, Any]:
    """A finished experiment whose checkpoint the others start from."""
    return _finish(master, _create(master, _config(6), _model_dir(tmp_path, "source")))


def test_warm_start_uuid_and_source_trial_id_start_from_the_weights_not_the_counter(
    master: Master, tmp_path: Path, source: dict[str, Any]
) -> None:
    weight = _final_weight(master, source)
    assert weight != pytest.approx(0.0)
    [ckpt] = [c for c in source["checkpoints"] if c["steps_completed"] == 6]

    by_flag = _finish(master, _create(master, _config(3), _model_dir(tmp_path, "a"),
                                      "--warm-start", ckpt["uuid"]))  # fmt: skip
    _assert_warm_started(master, by_flag, weight, 3)
    assert by_flag["experiment"]["config"]["searcher"]["source_checkpoint_uuid"] == ckpt["uuid"]

    by_uuid = _finish(master, _create(master, _config(2, source_checkpoint_uuid=ckpt["uuid"]),
                                      _model_dir(tmp_path, "b")))  # fmt: skip
    _assert_warm_started(master, by_uuid, weight, 2)

    trial_id = source["trials"][0]["id"]
    by_trial = _finish(master, _create(master, _config(2, source_trial_id=trial_id),
                                       _model_dir(tmp_path, "c")))  # fmt: skip
    _assert_warm_started(master, by_trial, weight, 2)


def _determined_checkpoint(root: Path, weight: float, trial_id: int) -> Path:
    """A PyTorchTrial checkpoint in Determined 0.38's layout (reference §2.8), its trial_state
    naming ``trial_id`` after 40 batches."""
    root.mkdir()
    torch.save(
        {
            "models_state_dict": [{"weight": torch.tensor([[weight]])}],
            "optimizers_state_dict": [torch.optim.SGD([torch.zeros(1)], lr=0.1).state_dict()],
            "lr_schedulers_state_dict": [],
            "callbacks": {},
            "rng_state": {
                "cpu_rng_state": torch.random.get_rng_state(),
                "np_rng_state": np.random.get_state(),
                "random_rng_state": random.getstate(),
            },  # fmt: skip
        },
        root / "state_dict.pth",
    )
    state = {"trial_id": trial_id, "last_ckpt": 40, "step_id": 4, "last_val": 40,
             "batches_trained": 40, "epochs_trained": 5}  # fmt: skip
    (root / "trial_state.pkl").write_bytes(pickle.dumps(state))
    (root / "load_data.json").write_text(json.dumps({"trial_type": "PyTorchTrial",
        "experiment_config": {}, "hparams": {"lr": 0.1}, "trial_cls_spec": "model_def:Scalar",
        "is_trainer": True}))  # fmt: skip
    (root / "metadata.json").write_text(json.dumps({"determined_version": "0.38.1",
        "steps_completed": 40, "framework": "torch-2.4.0", "format": "pickle"}))  # fmt: skip
    return root


def test_warm_start_path_loads_a_determined_checkpoint_even_with_a_clashing_trial_id(
    master: Master, tmp_path: Path
) -> None:
    # Trial ids start at 1 here, as they did in the Determined cluster that wrote it.
    ckpt = _determined_checkpoint(tmp_path / "det-ckpt", weight=2.5, trial_id=1)
    desc = _finish(master, _create(master, _config(3), _model_dir(tmp_path, "a"),
                                   "--warm-start", str(ckpt)))  # fmt: skip
    assert desc["trials"][0]["id"] == 1
    _assert_warm_started(master, desc, 2.5, 3)
    copied = desc["experiment"]["config"]["searcher"]["source_checkpoint_uuid"]
    assert (master.home / "checkpoints" / copied / "state_dict.pth").is_file()
    assert (ckpt / "state_dict.pth").is_file()  # the source directory is left as it was


def test_bad_warm_start_sources_fail_at_create_in_one_line(
    master: Master, tmp_path: Path, source: dict[str, Any]
) -> None:
    d = _model_dir(tmp_path, "bad")
    cases = [
        (("--warm-start", "0000-no-such"), _config(2), "no checkpoint '0000-no-such'"),
        (("--warm-start", str(tmp_path / "missing")), _config(2), "not a checkpoint directory"),
        ((), _config(2, source_trial_id=999), "no trial 999"),
        ((), _config(2, source_checkpoint_uuid="nope"), "no checkpoint 'nope'"),
        (("--warm-start", str(tmp_path)), _config(2, source_trial_id=1), "keep one"),
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    cases.append((("--warm-start", str(empty)), _config(2), "holds no files"))
    before = len(master.client.request("GET", "/api/v1/experiments")["experiments"])
    for extra, cfg, expected in cases:
        proc = _create(master, cfg, d, *extra)
        assert proc.returncode != 0, (extra, proc.stdout)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], (extra, proc.stderr)
        assert "Traceback" not in proc.stderr
    after = len(master.client.request("GET", "/api/v1/experiments")["experiments"])
    assert after == before


def test_a_source_in_another_experiments_storage_is_copied_where_the_trials_read(
    master: Master, tmp_path: Path
) -> None:
    cfg = _config(4)
    cfg["checkpoint_storage"] = {"type": "shared_fs", "host_path": str(tmp_path / "elsewhere")}
    source = _finish(master, _create(master, cfg, _model_dir(tmp_path, "source")))
    last = max(source["checkpoints"], key=lambda c: c["steps_completed"])
    saved = torch.load(tmp_path / "elsewhere" / last["uuid"] / "state_dict.pth",
                       weights_only=False)  # fmt: skip
    weight = float(saved["models_state_dict"][0]["weight"])
    assert not (master.home / "checkpoints" / last["uuid"]).exists()

    desc = _finish(master, _create(master, _config(2), _model_dir(tmp_path, "a"),
                                   "--warm-start", last["uuid"]))  # fmt: skip
    _assert_warm_started(master, desc, weight, 2)
    assert (master.home / "checkpoints" / last["uuid"] / "state_dict.pth").is_file()


CORE_SCRIPT = """
import json
import trialkit as det
from trialkit import core

info = det.get_cluster_info()
with core.init() as ctx:
    x = 0.0
    if info.latest_checkpoint:
        with ctx.checkpoint.restore_path(info.latest_checkpoint) as path:
            x = json.loads((path / "state.json").read_text())["x"]
    print(f"started at x={x} steps_completed={info.trial._steps_completed}", flush=True)
    for step in range(1, 3):
        x += 1
        ctx.train.report_training_metrics(steps_completed=step, metrics={"x": x})
    with ctx.checkpoint.store_path({"steps_completed": 2}) as (path, _):
        (path / "state.json").write_text(json.dumps({"x": x}))
"""


def test_a_core_api_script_warm_starts_from_a_determined_core_api_checkpoint(
    master: Master, tmp_path: Path
) -> None:
    ckpt = tmp_path / "core-ckpt"  # what Determined's CheckpointContext.store_path left
    ckpt.mkdir()
    (ckpt / "state.json").write_text(json.dumps({"x": 40.0}))
    (ckpt / "metadata.json").write_text(json.dumps({"steps_completed": 40}, indent=2))
    d = tmp_path / "core"
    write_script(d, "train.py", CORE_SCRIPT)
    cfg = {"name": "core-warm", "entrypoint": "python3 train.py", "max_restarts": 0,
           "searcher": {"name": "single", "metric": "x", "max_length": 2}}  # fmt: skip
    desc = _finish(master, _create(master, cfg, d, "--warm-start", str(ckpt)))
    assert [m["values"]["x"] for m in _training(master, desc)] == [41.0, 42.0]
    logs = master.cli("trial", "logs", str(desc["trials"][0]["id"])).stdout
    assert "started at x=40.0 steps_completed=0" in logs, logs
