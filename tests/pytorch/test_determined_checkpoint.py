"""Checkpoints in the layout Determined's PyTorchTrial / Trainer wrote (reference §2.8), built
here with ``torch.save`` of the documented keys: ``load_trial_from_checkpoint_path`` rebuilds the
Trial from ``code/`` with the weights, and ``Trainer.fit`` continues one (optimizer, counters)."""

from __future__ import annotations

import json
import pickle
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.local_runs import ingested_store  # noqa: E402
from trialkit import pytorch  # noqa: E402

from .trials import RegressionTrial  # noqa: E402

HERE = Path(__file__).resolve().parent
HP = {"global_batch_size": 8, "dropout": 0.0}
SPEC = "trials:RegressionTrial"


def _state_dict(weight: float, lr: float = 0.05) -> dict[str, Any]:
    """Determined's state_dict.pth: one model (every weight ``weight``) and its SGD optimizer
    with momentum buffers, the RNG states, no schedulers or callbacks."""
    with pytorch.init(hparams=dict(HP), seed=0) as ctx:
        trial = RegressionTrial(ctx)
    with torch.no_grad():
        for p in trial.model.parameters():
            p.fill_(weight)
    for p in trial.model.parameters():
        trial.opt.state[p]["momentum_buffer"] = torch.full_like(p, 0.25)
    trial.opt.param_groups[0]["lr"] = lr
    return {
        "models_state_dict": [trial.model.state_dict()],
        "optimizers_state_dict": [trial.opt.state_dict()],
        "lr_schedulers_state_dict": [],
        "callbacks": {"recorder": {"validations": 7}},
        "rng_state": {
            "cpu_rng_state": torch.random.get_rng_state(),
            "np_rng_state": np.random.get_state(),
            "random_rng_state": random.getstate(),
        },
    }


def _determined_checkpoint(
    root: Path, *, weight: float = 0.5, trial_id: int = 0, batches: int = 4,
    state_name: str = "state_dict.pth", legacy_metadata: bool = False,
) -> Path:  # fmt: skip
    root.mkdir(parents=True)
    (root / state_name).parent.mkdir(parents=True, exist_ok=True)
    torch.save(_state_dict(weight), root / state_name)
    state = {"trial_id": trial_id, "last_ckpt": batches, "step_id": 1, "last_val": batches,
             "batches_trained": batches, "epochs_trained": 0}  # fmt: skip
    (root / "trial_state.pkl").write_bytes(pickle.dumps(state))
    code = root / "code"
    code.mkdir()
    shutil.copy(HERE / "trials.py", code / "trials.py")
    metadata: dict[str, Any] = {"determined_version": "0.38.1", "steps_completed": batches,
                                "framework": "torch-2.4.0", "format": "pickle"}  # fmt: skip
    if legacy_metadata:  # Determined <= 0.17.7: what Checkpoint.download() wrote, no load_data
        metadata.update(experiment_config={"entrypoint": SPEC}, hparams=HP)
    else:
        load_data = {"trial_type": "PyTorchTrial", "experiment_config": None, "hparams": HP,
                     "trial_cls_spec": SPEC, "is_trainer": True}  # fmt: skip
        (root / "load_data.json").write_text(json.dumps(load_data))
    (root / "metadata.json").write_text(json.dumps(metadata, indent=2))
    return root


def _all_weights(model: Any) -> set[float]:
    return {float(v) for p in model.parameters() for v in p.detach().flatten()}


@pytest.mark.parametrize("legacy_metadata", [False, True])
def test_load_trial_from_a_determined_checkpoint(tmp_path: Path, legacy_metadata: bool) -> None:
    ckpt = _determined_checkpoint(tmp_path / "ckpt", legacy_metadata=legacy_metadata)
    trial = pytorch.load_trial_from_checkpoint_path(ckpt)
    assert type(trial).__name__ == "RegressionTrial"
    assert type(trial).__module__ == "trials"  # imported from the checkpoint's code/
    assert trial.context.get_hparams() == HP
    assert _all_weights(trial.model) == {0.5}


def test_legacy_state_file_and_single_model_key_load(tmp_path: Path) -> None:
    ckpt = _determined_checkpoint(tmp_path / "ckpt", state_name="determined/state_dict.pth")
    state = torch.load(ckpt / "determined/state_dict.pth", weights_only=False)
    state["model_state_dict"] = state.pop("models_state_dict")[0]
    torch.save(state, ckpt / "determined/state_dict.pth")
    trial = pytorch.load_trial_from_checkpoint_path(ckpt, trial_class=RegressionTrial)
    assert _all_weights(trial.model) == {0.5}


def test_bad_checkpoints_fail_with_one_clear_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RuntimeError, match="neither load_data.json nor a metadata.json"):
        pytorch.load_trial_from_checkpoint_path(empty)
    keras_ckpt = _determined_checkpoint(tmp_path / "keras")
    (keras_ckpt / "load_data.json").write_text(json.dumps({"trial_type": "TFKerasTrial",
        "trial_cls_spec": SPEC, "hparams": HP, "experiment_config": None}))  # fmt: skip
    with pytest.raises(RuntimeError, match="load_model_from_checkpoint_path"):
        pytorch.load_trial_from_checkpoint_path(keras_ckpt)


def test_trainer_continues_a_local_determined_checkpoint(trialkit_home: Path) -> None:
    """Determined's local Trainer wrote trial_id 0, so a local fit continues it: the weights,
    the optimizer's momentum and the batch counter carry on (reference §2.4 step 5)."""
    uuid = "0b0e1c6e-determined-local"
    _determined_checkpoint(trialkit_home / "checkpoints" / uuid, weight=0.5, batches=4)
    with pytorch.init(hparams=dict(HP), seed=0) as ctx:
        trial = RegressionTrial(ctx)
        trainer = pytorch.Trainer(trial, ctx)
        trainer.fit(max_length=pytorch.Batch(4), latest_checkpoint=uuid, checkpoint_policy="none")
        assert trainer.loop is not None and trainer.loop.progress.batches_trained == 4
        assert _all_weights(trial.model) == {0.5}  # nothing left to train: loaded as saved
        momentum = [trial.opt.state[p]["momentum_buffer"] for p in trial.model.parameters()]
        assert all(torch.equal(m, torch.full_like(m, 0.25)) for m in momentum)
        assert trial.callback.validations == 7
        trainer.fit(max_length=pytorch.Batch(6), latest_checkpoint=uuid, checkpoint_policy="none")
        assert trainer.loop.progress.batches_trained == 6
        assert _all_weights(trial.model) != {0.5}
    store = ingested_store(trialkit_home)
    try:
        t = store.list_trials()[-1]  # the one that resumed (building the state made one too)
        assert [m.steps_completed for m in store.list_metrics(t.id, "training")] == [6]
    finally:
        store.close()
