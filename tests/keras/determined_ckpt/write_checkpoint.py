"""Write a checkpoint the way Determined 0.38's TFKerasTrial did (``_save_checkpoint`` in
``determined/keras/_tf_keras_trial.py``, reference §3.2), with tf_keras (Keras 2):

    TF_USE_LEGACY_KERAS=1 python tests/keras/determined_ckpt/write_checkpoint.py OUT_DIR

The model is the iris example's (examples/iris_tf_keras, hyperparameters below) trained with
``model.fit`` for a few epochs. OUT_DIR gets ``checkpoint/`` (Determined's files) and
``reference.npz`` (the model's weights in ``get_weights()`` order, and the optimizer's
iteration count). ``tests/keras/determined_ckpt/iris`` was written with this script (tf_keras
2.21, TensorFlow 2.21); the Keras 3 tests load it, the tf_keras tests also write a fresh one.
"""

from __future__ import annotations

import json
import pickle
import random
import shutil
import sys
from pathlib import Path

import h5py
import numpy as np
import tensorflow as tf
import tf_keras as keras
from tf_keras.src.saving.legacy.hdf5_format import save_optimizer_weights_to_hdf5_group

REPO = Path(__file__).resolve().parents[3]
IRIS = REPO / "examples" / "iris_tf_keras"
HPARAMS = {"learning_rate": 0.01, "global_batch_size": 30, "layer1_dense_size": 16}
STEPS = 40  # 10 epochs of 4 batches


def _model() -> keras.Model:
    """The model IrisTrial.build_model builds, in tf_keras."""
    model = keras.Sequential(
        [
            keras.Input(shape=(4,)),
            keras.layers.Dense(HPARAMS["layer1_dense_size"], activation="relu"),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.RMSprop(learning_rate=HPARAMS["learning_rate"]),
        loss="categorical_crossentropy",
        metrics=[keras.metrics.CategoricalAccuracy()],
    )
    return model


def _rng_state() -> dict[str, object]:
    """determined._tf_rng.get_rng_state() in eager TF 2."""
    generator = tf.random.get_global_generator()
    return {
        "np_rng_state": np.random.get_state(),
        "random_rng_state": random.getstate(),
        "tf2_rng_global_algorithm": generator.algorithm,
        "tf2_rng_global_state": generator.state,
    }


def write(out: Path) -> Path:
    random.seed(3)
    np.random.seed(3)
    tf.random.set_seed(3)
    table = np.loadtxt(IRIS / "iris.csv", delimiter=",", skiprows=1, dtype="float32")
    held_out = np.arange(len(table)) % 5 == 4
    x, y = table[~held_out, :4], keras.utils.to_categorical(table[~held_out, 4].astype(int), 3)
    model = _model()
    model.fit(x, y, batch_size=30, epochs=STEPS // 4, verbose=0, shuffle=True)

    path = out / "checkpoint"
    path.mkdir(parents=True)
    # Determined's TFKerasTrialController._save_checkpoint, step by step:
    model.save_weights(str(path / "determined-keras-model-weights"), save_format="tf")
    with h5py.File(path / "determined-keras-optimizer-weights.h5", "w") as h5file:
        save_optimizer_weights_to_hdf5_group(h5file.create_group("optimizer-0"), model.optimizer)
    with open(path / "rng_state.pkl", "wb") as f:
        pickle.dump(_rng_state(), f)
    # det.util.write_user_code: the model directory
    shutil.copytree(IRIS, path / "code", ignore=shutil.ignore_patterns("__pycache__", "*.md"))
    with (path / "determined-callbacks.v1.pkl").open("wb") as f:
        pickle.dump({}, f)  # the multiplexer's state with no stateful callbacks
    with (path / "workload_sequencer.pkl").open("wb") as f:
        state = {"trial_id": 1, "last_ckpt": STEPS, "steps_completed": STEPS, "step_id": 10,
                 "last_val": STEPS}  # fmt: skip
        pickle.dump(state, f)
    config = {"entrypoint": "model_def:IrisTrial", "hyperparameters": HPARAMS,
              "records_per_epoch": 120}  # fmt: skip
    with open(path / "load_data.json", "w") as f2:
        json.dump({"trial_type": "TFKerasTrial", "experiment_config": config, "hparams": HPARAMS,
                   "trial_cls_spec": "model_def:IrisTrial"}, f2)  # fmt: skip
    # CheckpointContext.store_path writes metadata.json (indent 2) with the harness's metadata.
    metadata = {"determined_version": "0.38.1", "steps_completed": STEPS,
                "framework": f"tensorflow-{tf.__version__}", "format": "saved_weights"}  # fmt: skip
    (path / "metadata.json").write_text(json.dumps(metadata, indent=2))
    np.savez(out / "reference.npz", *model.get_weights(),
             iterations=np.asarray(int(model.optimizer.iterations.numpy())))  # fmt: skip
    return path


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
