"""Checkpoints written by Determined's TFKerasTrial (tf.keras 2 layout, reference §3.2) load into
Keras 3 and tf_keras: ``load_model_from_checkpoint_path`` returns the model with its weights,
the harness restores weights and optimizer state, and under the master a trial warm-starts from
one (``--warm-start PATH``) with its batch count at 0.

On Keras 3 the checkpoint is the one in determined_ckpt/iris (written by write_checkpoint.py with
tf_keras); on tf_keras (TF_USE_LEGACY_KERAS=1) a fresh one is written the same way first."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip("tensorflow", reason="Determined's Keras checkpoints need tensorflow")
h5py = pytest.importorskip("h5py")

from tests.integration.conftest import EXAMPLES, Master  # noqa: E402
from trialkit._alias import install  # noqa: E402
from trialkit.keras import load_model_from_checkpoint_path  # noqa: E402
from trialkit.keras._determined import load_determined_checkpoint  # noqa: E402
from trialkit.keras._keras import keras_module, legacy_keras_requested  # noqa: E402

HERE = Path(__file__).resolve().parent
IRIS = EXAMPLES / "iris_tf_keras"
SAVED = HERE / "determined_ckpt" / "iris"
install()  # the checkpoints' model code imports determined


@pytest.fixture
def determined(tmp_path: Path) -> Path:
    """A Determined TFKerasTrial checkpoint directory (and reference.npz beside it)."""
    out = tmp_path / "det"
    if legacy_keras_requested():
        from tests.keras.determined_ckpt.write_checkpoint import write

        return write(out)
    shutil.copytree(SAVED, out)
    return out / "checkpoint"


def _reference(ckpt: Path) -> tuple[list[np.ndarray], int]:
    with np.load(ckpt.parent / "reference.npz") as ref:
        weights = [ref[f"arr_{i}"] for i in range(len(ref.files) - 1)]
        return weights, int(ref["iterations"])


def _iris_model(units: int = 16) -> Any:
    keras = keras_module()
    model = keras.Sequential(
        [
            keras.Input(shape=(4,)),
            keras.layers.Dense(units, activation="relu"),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(optimizer=keras.optimizers.RMSprop(0.01), loss="categorical_crossentropy")
    return model


def _saved_optimizer(ckpt: Path) -> dict[str, np.ndarray]:
    with h5py.File(ckpt / "determined-keras-optimizer-weights.h5", "r") as f:
        group = f["optimizer-0/optimizer_weights"]
        names = [
            n.decode() if isinstance(n, bytes) else str(n) for n in group.attrs["weight_names"]
        ]
        return {n: group[n][()] for n in names}


def test_load_model_from_checkpoint_path_returns_the_trials_model_with_its_weights(
    determined: Path,
) -> None:
    weights, _ = _reference(determined)
    model = load_model_from_checkpoint_path(determined)
    got = model.get_weights()
    assert len(got) == len(weights) == 4
    for a, b in zip(got, weights, strict=True):
        np.testing.assert_array_equal(a, b)
    assert model.optimizer is not None  # built by the checkpoint's own IrisTrial (code/)


def test_harness_load_restores_weights_and_the_optimizers_slots(determined: Path) -> None:
    weights, iterations = _reference(determined)
    model = _iris_model()
    load_determined_checkpoint(model, determined)
    for a, b in zip(model.get_weights(), weights, strict=True):
        np.testing.assert_array_equal(a, b)
    opt = model.optimizer
    assert iterations == 40 and int(opt.iterations.numpy()) == iterations
    saved = _saved_optimizer(determined)
    # RMSprop's one slot per variable, in trainable-variable order, whatever it is called
    slots = [v for k, v in saved.items() if v.ndim > 0]
    assert len(slots) == 4
    velocities = opt._velocities if hasattr(opt, "_velocities") else [
        opt.get_slot(v, "rms") for v in model.trainable_variables
    ]  # fmt: skip
    for var, value in zip(velocities, slots, strict=True):
        np.testing.assert_array_equal(np.asarray(var.numpy()), value)
        assert np.any(value != 0)


def test_a_model_that_does_not_match_fails_naming_the_variable(determined: Path) -> None:
    with pytest.raises(RuntimeError, match=r"found 0 entries for .*kernel.*model does not match"):
        load_determined_checkpoint(_iris_model(units=8), determined)


@pytest.mark.integration
def test_warm_start_from_a_determined_checkpoint_under_the_master(
    master: Master, tmp_path: Path, determined: Path
) -> None:
    model_dir = Path(shutil.copytree(IRIS, tmp_path / "iris"))
    cfg: dict[str, Any] = yaml.safe_load((IRIS / "const.yaml").read_text())
    cfg["hyperparameters"].update(learning_rate=0.01, layer1_dense_size=16)
    cfg.update(perform_initial_validation=True, scheduling_unit=1)
    cfg["searcher"]["max_length"] = {"batches": 3}
    (model_dir / "_config.json").write_text(json.dumps(cfg))
    out = master.cli("experiment", "create", "--warm-start", str(determined),
                     str(model_dir / "_config.json"), str(model_dir)).stdout  # fmt: skip
    exp = int(out.strip().split()[-1])
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    # workload_sequencer.pkl says trial 1 after 40 batches; this trial 1 still starts at 0.
    assert trial["id"] == 1
    train = master.client.request("GET", f"/api/v1/trials/{trial['id']}/metrics",
                                  params={"group": "training"})["metrics"]  # fmt: skip
    assert [m["steps_completed"] for m in train] == [1, 2, 3]
    vals = master.client.request("GET", f"/api/v1/trials/{trial['id']}/metrics",
                                 params={"group": "validation"})["metrics"]  # fmt: skip
    assert vals[0]["steps_completed"] == 0
    # The step-0 validation is the Determined checkpoint's model on the held-out rows.
    expected = _expected_val_loss(determined)
    assert vals[0]["values"]["val_loss"] == pytest.approx(expected, rel=1e-5)
    fresh = _iris_model()
    assert abs(_val_loss(fresh) - expected) > 0.1  # an untrained model is far from it


def _expected_val_loss(ckpt: Path) -> float:
    return _val_loss(load_model_from_checkpoint_path(ckpt))


def _val_loss(model: Any) -> float:
    keras = keras_module()
    table = np.loadtxt(IRIS / "iris.csv", delimiter=",", skiprows=1, dtype="float32")
    held = np.arange(len(table)) % 5 == 4
    x, y = table[held, :4], keras.utils.to_categorical(table[held, 4].astype(int), 3)
    return float(model.evaluate(x, y, batch_size=30, verbose=0, return_dict=True)["loss"])


# Determined 0.12-0.17 layouts ------------------------------------------------------------------

#: A TFKerasTrial as written for Determined 0.12-0.17 (checkpoint's code/model_def.py).
OLD_MODEL_DEF = """
import numpy as np
import tensorflow as tf
from determined import keras


class TinyTrial(keras.TFKerasTrial):
    def __init__(self, context):
        self.context = context

    def build_model(self):
        model = self.context.wrap_model(tf.keras.Sequential([
            tf.keras.Input(shape=(4,)),
            tf.keras.layers.Dense(self.context.get_hparam("units")),
            tf.keras.layers.Dense(2),
        ]))
        optimizer = self.context.wrap_optimizer(tf.keras.optimizers.Adam(0.01))
        model.compile(optimizer=optimizer, loss="mse")
        return model

    def build_training_data_loader(self):
        return np.zeros((8, 4), "float32"), np.zeros((8, 2), "float32")

    def build_validation_data_loader(self):
        return self.build_training_data_loader()
"""
OLD_HPARAMS = {"global_batch_size": 4, "units": 3}
OLD_CONFIG = {"entrypoint": "model_def:TinyTrial", "hyperparameters": OLD_HPARAMS}


def _write_optimizer_weights(group: Any, names: list[str], values: list[Any]) -> None:
    """Keras 2's HDF5 optimizer format (``save_optimizer_weights_to_hdf5_group``)."""
    weights = group.create_group("optimizer_weights")
    weights.attrs["weight_names"] = [n.encode() for n in names]
    for name, value in zip(names, values, strict=True):
        weights.create_dataset(name, data=value)


def _adam_v2(variables: list[str], slots: dict[str, list[Any]], iterations: int) -> tuple:
    """OptimizerV2's weights in order: ``iter``, its hyperparameters, then each slot per var."""
    names = ["Adam/iter:0", "Adam/beta_1:0", "Adam/beta_2:0", "Adam/decay:0"]
    values: list[Any] = [np.int64(iterations), np.float32(0.9), np.float32(0.999), np.float32(0)]
    for slot in ("m", "v"):
        names += [f"Adam/{v}/{slot}:0" for v in variables]
        values += slots[slot]
    return names, values


def _old_trial_files(ckpt: Path, load_data: bool, fmt: str) -> None:
    """code/, workload_sequencer.pkl and load_data.json (0.17.8+) or the metadata.json that
    Determined <= 0.17.7 wrote at download."""
    import pickle

    (ckpt / "code").mkdir(parents=True, exist_ok=True)
    (ckpt / "code" / "model_def.py").write_text(OLD_MODEL_DEF)
    state = {"trial_id": 3, "last_ckpt": 7, "steps_completed": 7, "step_id": 7, "last_val": 7}
    (ckpt / "workload_sequencer.pkl").write_bytes(pickle.dumps(state))
    if load_data:
        data = {"trial_type": "TFKerasTrial", "experiment_config": OLD_CONFIG,
                "hparams": OLD_HPARAMS, "trial_cls_spec": "model_def:TinyTrial"}  # fmt: skip
        (ckpt / "load_data.json").write_text(json.dumps(data))
    else:
        meta = {"format": fmt, "framework": "tensorflow-2.4.1", "experiment_config": OLD_CONFIG,
                "hparams": OLD_HPARAMS, "determined_version": "0.15.6"}  # fmt: skip
        (ckpt / "metadata.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("load_data", [True, False], ids=["load_data.json", "metadata.json"])
def test_a_0_12_to_0_13_whole_model_h5_checkpoint_loads_weights_and_optimizer(
    tmp_path: Path, load_data: bool
) -> None:
    """Determined < 0.13.8: ``determined-keras-model.h5`` (``tf.keras.models.save_model``)."""
    rng = np.random.default_rng(7)
    shapes = {"dense/kernel": (4, 3), "dense/bias": (3,), "dense_1/kernel": (3, 2),
              "dense_1/bias": (2,)}  # fmt: skip
    weights = [rng.normal(size=s).astype("float32") for s in shapes.values()]
    slots = {s: [rng.uniform(0.1, 1, size=w.shape).astype("float32") for w in weights]
             for s in ("m", "v")}  # fmt: skip
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    with h5py.File(ckpt / "determined-keras-model.h5", "w") as f:
        f.attrs["keras_version"], f.attrs["backend"] = "2.4.0", "tensorflow"
        f.attrs["model_config"] = json.dumps({"class_name": "Sequential", "config": {}})
        group = f.create_group("model_weights")
        group.attrs["layer_names"] = [b"dense", b"dense_1"]
        for layer in ("dense", "dense_1"):
            names = [f"{layer}/kernel:0", f"{layer}/bias:0"]
            group.create_group(layer).attrs["weight_names"] = [n.encode() for n in names]
            for name in names:
                group[layer].create_dataset(name, data=weights[list(shapes).index(name[:-2])])
        _write_optimizer_weights(f, *_adam_v2(list(shapes), slots, 7))
    _old_trial_files(ckpt, load_data, "h5")

    import determined as det

    model = det.keras.load_model_from_checkpoint_path(str(ckpt))
    for got, want in zip(model.get_weights(), weights, strict=True):
        np.testing.assert_array_equal(got, want)
    assert int(model.optimizer.iterations.numpy()) == 7
    for var, want in zip(model.optimizer._momentums, slots["m"], strict=True):
        np.testing.assert_array_equal(var.numpy(), want)


def test_a_0_13_to_0_17_saved_weights_checkpoint_loads_weights_and_optimizer(
    determined: Path,
) -> None:
    """Determined 0.13.8-0.17: ``determined-keras-model-weights.*`` and the optimizer's HDF5
    file without per-optimizer groups; downloaded by 0.17.7 (metadata.json, no load_data.json)."""
    weights, iterations = _reference(determined)
    saved = _saved_optimizer(determined)
    (determined / "determined-keras-optimizer-weights.h5").unlink()
    (determined / "load_data.json").unlink()
    with h5py.File(determined / "determined-keras-optimizer-weights.h5", "w") as f:
        _write_optimizer_weights(f, list(saved), list(saved.values()))
    config = {"entrypoint": "model_def:IrisTrial", "hyperparameters": {
        "learning_rate": 0.01, "global_batch_size": 30, "layer1_dense_size": 16}}  # fmt: skip
    meta = {"format": "saved_weights", "framework": "tensorflow-2.4.1",
            "experiment_config": config, "hparams": config["hyperparameters"]}  # fmt: skip
    (determined / "metadata.json").write_text(json.dumps(meta))

    import determined as det

    model = det.keras.load_model_from_checkpoint_path(determined)
    for got, want in zip(model.get_weights(), weights, strict=True):
        np.testing.assert_array_equal(got, want)
    assert int(model.optimizer.iterations.numpy()) == iterations == 40
