"""Issue 32, Determined-shaped user code (``import determined as det``) for the PyTorch side:
``det.import_from_path`` and loading an old checkpoint by its ``trial_cls_spec``, ``context.env``,
``PyTorchTrialContext.from_config``, ``to_device``'s warning, ``core.Context.experimental``,
``det.RendezvousInfo``/``det.ResourcesInfo``, ``overwrite_deepspeed_config``'s errors."""

from __future__ import annotations

import itertools
import json
import logging
import pickle
import sys
import textwrap
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def det() -> ModuleType:
    """``import determined`` through trialkit's alias (no Determined installed)."""
    from trialkit import _alias

    if not _alias.install():
        pytest.skip("the determined alias is switched off here")
    import determined

    assert _alias.is_alias(determined)
    return determined


# A Determined 0.15-era PyTorchTrial as a checkpoint's code/ keeps it: reads context.env, and
# imports a sibling module whose name clashes with one the caller has imported already.
OLD_MODEL_DEF = """
import torch
import determined as det
import helpers

class OldTrial(det.pytorch.PyTorchTrial):
    def __init__(self, context):
        self.context = context
        width = context.env.hparams["width"]
        self.seed_seen = context.env.trial_seed
        self.model = context.wrap_model(torch.nn.Linear(width, 1, bias=False))
        self.helper = helpers.WHICH

    def build_training_data_loader(self):
        raise NotImplementedError

    def build_validation_data_loader(self):
        raise NotImplementedError

    def train_batch(self, batch, epoch_idx, batch_idx):
        return {}

    def evaluate_batch(self, batch):
        return {}
"""


def _old_checkpoint(root: Path, *, load_data: bool) -> Path:
    """A Determined PyTorchTrial checkpoint of 0.13-0.21: state_dict.pth, trial_state.pkl,
    code/, and load_data.json (0.18+) or the metadata.json download wrote (<= 0.17.7)."""
    code = root / "code"
    code.mkdir(parents=True)
    (code / "model_def.py").write_text(OLD_MODEL_DEF)
    (code / "helpers.py").write_text("WHICH = 'checkpoint'\n")
    weights = {"weight": torch.full((1, 3), 0.75)}
    torch.save(
        {"models_state_dict": [weights], "optimizers_state_dict": []}, root / "state_dict.pth"
    )
    (root / "trial_state.pkl").write_bytes(pickle.dumps({"batches_trained": 4}))
    config = {"entrypoint": "model_def:OldTrial", "hyperparameters": {"width": 3}}
    if load_data:
        (root / "load_data.json").write_text(json.dumps({
            "trial_type": "PyTorchTrial", "experiment_config": config, "hparams": {"width": 3},
            "trial_cls_spec": "model_def:OldTrial", "is_trainer": False,
        }))  # fmt: skip
    else:
        (root / "metadata.json").write_text(json.dumps({
            "torch_version": "1.7.1", "experiment_config": config, "hparams": {"width": 3},
        }))  # fmt: skip
    return root


@pytest.fixture
def caller_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The caller's own current model_def.py and helpers.py, imported from its working dir."""
    here = tmp_path / "project"
    here.mkdir()
    (here / "model_def.py").write_text("CURRENT = True\n")
    (here / "helpers.py").write_text("WHICH = 'current'\n")
    monkeypatch.chdir(here)
    monkeypatch.syspath_prepend(str(here))
    for name in ("model_def", "helpers"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import helpers  # noqa: F401
    import model_def  # noqa: F401

    yield here
    for name in ("model_def", "helpers"):
        sys.modules.pop(name, None)


def test_import_from_path_imports_a_checkpoints_model_def_beside_the_current_one(
    det: ModuleType, tmp_path: Path, caller_modules: Path
) -> None:
    ckpt = _old_checkpoint(tmp_path / "ckpt", load_data=True)
    import model_def as new_model_def

    with det.import_from_path(ckpt / "code"):
        import model_def as old_model_def

        assert old_model_def.OldTrial.__name__ == "OldTrial"
        assert sys.modules["helpers"].WHICH == "checkpoint"
    assert new_model_def.CURRENT and not hasattr(new_model_def, "OldTrial")
    assert old_model_def is not new_model_def
    # Afterwards the caller's modules are back, and nothing was cached inside the checkpoint.
    assert sys.modules["model_def"] is new_model_def
    assert sys.modules["helpers"].WHICH == "current"
    assert not (ckpt / "code" / "__pycache__").exists()
    # The module-name form imports one module the same way and returns it.
    assert det.import_from_path("helpers", ckpt / "code").WHICH == "checkpoint"
    assert sys.modules["helpers"].WHICH == "current"
    with det.import_from_path(ckpt / "code"), pytest.raises(RuntimeError, match="nested"):
        with det.import_from_path(tmp_path):
            pass


@pytest.mark.parametrize("load_data", [True, False], ids=["load_data.json", "metadata.json"])
def test_an_old_checkpoint_loads_by_its_trial_spec(
    det: ModuleType, tmp_path: Path, caller_modules: Path, load_data: bool
) -> None:
    ckpt = _old_checkpoint(tmp_path / "ckpt", load_data=load_data)
    trial = det.pytorch.load_trial_from_checkpoint_path(str(ckpt))
    assert type(trial).__name__ == "OldTrial"
    assert trial.helper == "checkpoint"  # its own helpers.py, not the caller's
    assert torch.equal(trial.model.weight, torch.full((1, 3), 0.75))
    assert sys.modules["helpers"].WHICH == "current"  # the caller's modules untouched
    assert not hasattr(sys.modules["model_def"], "OldTrial")


def test_context_env_is_determineds_env_context(det: ModuleType) -> None:
    with det.pytorch.init(hparams={"global_batch_size": 4, "lr": 0.1}) as context:
        env = context.env
        assert isinstance(env, det.EnvContext)
        assert env.hparams == {"global_batch_size": 4, "lr": 0.1}
        assert env.hparams is context.get_hparams()
        assert (env.det_trial_id, env.det_experiment_id, env.master_url) == ("", "", "")
        assert env.on_cluster is False and env.steps_completed == 0
        assert env.latest_checkpoint is None and env.use_gpu is (context.device.type == "cuda")
        env.container_gpus = []  # what old model code does: setting a field works
        assert context.env.container_gpus == []
        env.hparams["lr"] = 0.5  # the same dict the getters read, as in Determined
        assert context.get_hparam("lr") == 0.5


def test_context_env_under_a_master_carries_the_trials_ids(det: ModuleType) -> None:
    info = det.ClusterInfo(
        master_url="http://127.0.0.1:8080", cluster_id="c1", agent_id="a1", slot_ids=[0],
        task_id="t", allocation_id="alloc", session_token="", latest_checkpoint="uuid-1",
        trial=det.TrialInfo(trial_id=7, experiment_id=3, trial_seed=11, hparams={},
                            config={}, steps_completed=20, trial_run_id=2),
    )  # fmt: skip
    from trialkit.core import DummyDistributedContext

    core = SimpleNamespace(distributed=DummyDistributedContext(), info=info)
    context = det.pytorch.PyTorchTrialContext(core, hparams={}, trial_seed=11, steps_completed=20)
    env = context.env
    assert (env.det_trial_id, env.det_experiment_id) == ("7", "3")
    assert (env.latest_checkpoint, env.steps_completed, env.trial_seed) == ("uuid-1", 20, 11)
    assert (env.master_url, env.det_cluster_id, env.det_agent_id) == (
        "http://127.0.0.1:8080", "c1", "a1",
    )  # fmt: skip
    assert (env.allocation_id, env.trial_run_id, env.slot_ids, env.on_cluster) == (
        "alloc", 2, [0], True,
    )  # fmt: skip


CONFIG = {
    "hyperparameters": {
        "global_batch_size": 8,
        "width": {"type": "const", "val": 3},
        "lr": {"type": "double", "minval": 0.01, "maxval": 0.1},
    },
    "reproducibility": {"experiment_seed": 5},
    "data": {"path": "/data"},
}


def test_pytorch_trial_context_from_config(det: ModuleType) -> None:
    """Determined's local debugging recipe, as its docs show it."""

    class Trial(det.pytorch.PyTorchTrial):
        def __init__(self, context: Any) -> None:
            self.context = context
            width = context.get_hparam("width")
            self.model = context.wrap_model(torch.nn.Linear(width, 1))
            self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))

        def build_training_data_loader(self) -> Any:
            data = torch.utils.data.TensorDataset(torch.ones(16, 3), torch.zeros(16, 1))
            return det.pytorch.DataLoader(data, batch_size=self.context.get_per_slot_batch_size())

        def build_validation_data_loader(self) -> Any:
            return self.build_training_data_loader()

        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.context.backward(loss)
            self.context.step_optimizer(self.opt)
            return {"loss": loss}

        def evaluate_batch(self, batch: Any) -> dict[str, Any]:
            return {}

    context = det.pytorch.PyTorchTrialContext.from_config(CONFIG)
    assert isinstance(context, det.pytorch.PyTorchTrialContext)
    hparams = context.get_hparams()
    assert hparams["width"] == 3 and hparams["global_batch_size"] == 8
    assert 0.01 <= hparams["lr"] <= 0.1
    assert context.get_trial_seed() == 5 and context.get_data_config() == {"path": "/data"}
    assert context.get_per_slot_batch_size() == 8 and context.distributed.size == 1
    assert context.env.hparams is hparams and context.env.managed_training is False
    assert det.pytorch.PyTorchTrialContext.from_config(CONFIG).get_hparams() == hparams
    trial = Trial(context)
    for batch_idx, batch in enumerate(trial.build_training_data_loader()):
        metrics = trial.train_batch(batch, 0, batch_idx)
    assert batch_idx == 1 and metrics["loss"].item() >= 0


def test_to_device_warns_once_per_type(det: ModuleType, caplog: pytest.LogCaptureFixture) -> None:
    class Opaque:
        pass

    caplog.set_level(logging.WARNING)

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if "not able to move data" in r.getMessage()]

    batch = {"x": torch.ones(2), "meta": Opaque(), "more": [Opaque(), "name"]}
    out = det.pytorch.to_device(batch, torch.device("cpu"), None)
    assert out["meta"] is batch["meta"] and out["more"][1] == "name"
    assert warnings() == [
        "Was not able to move data item of type 'Opaque' to device.",
        "Was not able to move data item of type 'str' to device.",
    ]
    det.pytorch.to_device(batch, "cpu")  # warned_types None: warned again, every call
    assert len(warnings()) == 4
    caplog.clear()
    warned: set[type] = set()
    det.pytorch.to_device(batch, "cpu", warned)
    det.pytorch.to_device([Opaque()], "cpu", warned)  # the shared set: once per type
    assert len(warnings()) == 2 and warned == {Opaque, str}


def test_core_context_experimental(det: ModuleType, trialkit_home: Path) -> None:
    with det.core.init() as core_context:
        assert isinstance(core_context.experimental, det.core.ExperimentalCoreContext)
        checkpoint = SimpleNamespace(uuid="0b0e-ckpt")
        core_context.experimental.report_task_using_checkpoint(checkpoint)
        model_version = SimpleNamespace(checkpoint=checkpoint, model_name="m", model_version=2)
        core_context.experimental.report_task_using_model_version(model_version)


def test_rendezvous_and_resources_info(
    det: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendezvous = det.RendezvousInfo(
        container_addrs=["10.0.0.1", "10.0.0.2"], container_rank=1, container_slot_counts=[2, 2]
    )
    resources = det.ResourcesInfo(gpu_uuids=["GPU-a", "GPU-b"])
    info = det.ClusterInfo(
        master_url="http://m", cluster_id="c", agent_id="a", slot_ids=[0, 1], task_id="t",
        allocation_id="al", session_token="", rendezvous_info=rendezvous, resources_info=resources,
    )  # fmt: skip
    assert info.rendezvous_info is rendezvous and info.resources_info is resources
    assert info.container_addrs == ["10.0.0.1", "10.0.0.2"] and info.container_rank == 1
    assert info.container_slot_counts == [2, 2] and info.gpu_uuids == ["GPU-a", "GPU-b"]
    # Round trip through the info file the master writes, as get_cluster_info() reads it.
    path = tmp_path / "info.json"
    path.write_text(json.dumps(info._to_json()))
    monkeypatch.setenv("TRIALKIT_CLUSTER_INFO", str(path))
    read = det.get_cluster_info()
    assert isinstance(read.rendezvous_info, det.RendezvousInfo)
    assert read.rendezvous_info.container_addrs == ["10.0.0.1", "10.0.0.2"]
    assert read.container_slot_counts == [2, 2] and read.resources_info.gpu_uuids == [
        "GPU-a",
        "GPU-b",
    ]
    # Without them: one container at this host, no GPUs, as before.
    plain = det.ClusterInfo(master_url="http://m", cluster_id="c", agent_id="a", slot_ids=[0],
                            task_id="t", allocation_id="al", session_token="")  # fmt: skip
    assert plain.rendezvous_info.container_addrs == ["127.0.0.1"]
    assert plain.container_slot_counts == [1] and plain.resources_info.gpu_uuids == []


def test_overwrite_deepspeed_config_raises_determineds_errors(
    det: ModuleType, tmp_path: Path
) -> None:
    ds = pytest.importorskip("determined.pytorch.deepspeed", reason="trialkit.deepspeed absent")
    with pytest.raises(TypeError, match=r"^Expected string or dict for base_ds_config argument\.$"):
        ds.overwrite_deepspeed_config([1, 2], {"train_batch_size": 2})
    with pytest.raises(TypeError, match=r"^Expected dict for source_ds_dict argument\.$"):
        ds.overwrite_deepspeed_config({"train_batch_size": 1}, [("train_batch_size", 2)])
    path = tmp_path / "ds_config.json"
    path.write_text(textwrap.dedent('{"train_batch_size": 1, "zero_optimization": {"stage": 1}}'))
    assert ds.overwrite_deepspeed_config(str(path), {"zero_optimization": {"stage": 2}}) == {
        "train_batch_size": 1,
        "zero_optimization": {"stage": 2},
    }


# Item 12: DataLoader(shuffle=True) visits records in Determined's order ------------------------

N_RECORDS, BATCH = 10, 4  # 3 batches a pass, the last one short


class _Repeat:
    """Determined's RepeatBatchSampler, written out: the batch sampler again and again."""

    def __init__(self, batch_sampler: Any) -> None:
        self.batch_sampler = batch_sampler

    def __iter__(self) -> Any:
        while True:
            yield from self.batch_sampler


def _determined_order(skip: int, count: int, rng_state: Any = None) -> list[list[int]]:
    """The batches Determined's PyTorchTrial trains on: torch's RandomSampler (no generator:
    each pass seeded from the global torch RNG) in a BatchSampler, repeated, the first ``skip``
    batches skipped; the training DataLoader's iterator is made (it draws its base seed), then
    a resumed trial restores the checkpoint's RNG, then the first batch is drawn."""
    data = torch.utils.data.TensorDataset(torch.arange(N_RECORDS))
    sampler = torch.utils.data.RandomSampler(data)
    chain = _Repeat(torch.utils.data.BatchSampler(sampler, BATCH, drop_last=False))
    loader = torch.utils.data.DataLoader(data, batch_sampler=chain)
    it = iter(loader)
    if rng_state is not None:
        torch.random.set_rng_state(rng_state)
    batches = [b[0].tolist() for b in itertools.islice(it, skip + count)]
    return batches[skip:]


def _recording_trial(det: ModuleType) -> type:
    class Recording(det.pytorch.PyTorchTrial):
        def __init__(self, context: Any) -> None:
            self.context = context
            self.model = context.wrap_model(torch.nn.Linear(1, 1))  # draws from the RNG
            self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))
            self.seen: list[list[int]] = []

        def build_training_data_loader(self) -> Any:
            data = torch.utils.data.TensorDataset(torch.arange(N_RECORDS))
            return det.pytorch.DataLoader(data, batch_size=BATCH, shuffle=True)

        def build_validation_data_loader(self) -> Any:
            data = torch.utils.data.TensorDataset(torch.arange(N_RECORDS))
            return det.pytorch.DataLoader(data, batch_size=BATCH)

        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            (ids,) = batch
            self.seen.append(ids.tolist())
            loss = self.model(ids.float().unsqueeze(1)).pow(2).mean()
            self.context.backward(loss)
            self.context.step_optimizer(self.opt)
            return {"loss": loss.detach()}

        def evaluate_batch(self, batch: Any) -> dict[str, Any]:
            return {"x": 0.0}

    return Recording


def test_shuffled_order_is_determineds_for_the_same_seed(
    det: ModuleType, trialkit_home: Path
) -> None:
    """Three passes of a fresh trial, seeded as Determined seeds a trial (then the Trial builds
    its model from the same RNG): the same batches in the same order."""
    for seed in (0, 17):
        torch.manual_seed(seed)
        torch.nn.Linear(1, 1)  # what the Trial's __init__ draws
        expected = _determined_order(skip=0, count=8)
        torch.manual_seed(seed)
        with det.pytorch.init(hparams={"global_batch_size": BATCH}) as context:
            trial = _recording_trial(det)(context)
            det.pytorch.Trainer(trial, context).fit(
                max_length=det.pytorch.Batch(8), checkpoint_policy="none"
            )
        assert trial.seen == expected, seed


def test_a_determined_checkpoint_resumes_on_determineds_order(
    det: ModuleType, trialkit_home: Path
) -> None:
    """A Determined checkpoint at batch 4 (its trial_state.pkl and the RNG state it saved):
    trialkit skips the 4 batches and draws each pass from the restored RNG, as Determined."""
    import random

    import numpy as np

    torch.manual_seed(1234)
    cpu_rng = torch.random.get_rng_state()
    with det.pytorch.init(hparams={"global_batch_size": BATCH}) as context:
        source = _recording_trial(det)(context)
    uuid = "7e57-determined-shuffle"
    root = trialkit_home / "checkpoints" / uuid
    root.mkdir(parents=True)
    torch.save({
        "models_state_dict": [source.model.state_dict()],
        "optimizers_state_dict": [source.opt.state_dict()],
        "lr_schedulers_state_dict": [], "callbacks": {},
        "rng_state": {"cpu_rng_state": cpu_rng, "np_rng_state": np.random.get_state(),
                      "random_rng_state": random.getstate()},
    }, root / "state_dict.pth")  # fmt: skip
    state = {"trial_id": 0, "last_ckpt": 4, "step_id": 1, "last_val": 4,
             "batches_trained": 4, "epochs_trained": 1}  # fmt: skip
    (root / "trial_state.pkl").write_bytes(pickle.dumps(state))
    (root / "metadata.json").write_text(json.dumps({"steps_completed": 4}))
    with det.pytorch.init(hparams={"global_batch_size": BATCH}) as context:
        trial = _recording_trial(det)(context)
        det.pytorch.Trainer(trial, context).fit(
            max_length=det.pytorch.Batch(10), latest_checkpoint=uuid, checkpoint_policy="none"
        )
    assert trial.seen == _determined_order(skip=4, count=6, rng_state=cpu_rng)
