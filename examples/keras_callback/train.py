"""Your own ``model.fit`` on trialkit: TrialkitCallback (Determined's DeterminedCallback) reports
metrics, checkpoints every epoch, resumes after a pause and stops when preempted. Runs on any
Keras 3 backend (``KERAS_BACKEND=tensorflow|torch|jax``) and on tf_keras (``TF_USE_LEGACY_KERAS=1``),
under the master or on its own (``python train.py``: local mode)."""

import logging
import os

import numpy as np

import trialkit
from trialkit import core
from trialkit.keras import TrialkitCallback

if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras  # what tf.keras is under TF_USE_LEGACY_KERAS=1
else:
    import keras


def synthetic_data(seed: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """A separable two-class problem over 8 features."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 8)).astype("float32")
    w = np.linspace(-1.0, 1.0, 8, dtype="float32")
    return x, (x @ w > 0).astype("float32")


def build_model(hidden: int, learning_rate: float) -> "keras.Model":
    model = keras.Sequential(
        [
            keras.Input(shape=(8,)),
            keras.layers.Dense(hidden, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=["binary_accuracy"],
    )
    return model


def main() -> None:
    info = trialkit.get_cluster_info()
    if info is not None:  # under the master: the trial's hyperparameters and latest checkpoint
        hparams = info.trial.hparams
        checkpoint, continue_id = info.latest_checkpoint, info.trial.trial_id
        keras.utils.set_random_seed(info.trial.trial_seed % 2**32)
    else:
        hparams = {"learning_rate": 0.01, "hidden": 16, "epochs": 5, "batch_size": 32}
        checkpoint, continue_id = None, "local"
    x, y = synthetic_data(0, 512)
    val_x, val_y = synthetic_data(1, 128)
    model = build_model(int(hparams["hidden"]), float(hparams["learning_rate"]))
    with core.init() as core_context:
        callback = TrialkitCallback(core_context, checkpoint=checkpoint, continue_id=continue_id)
        model.fit(
            x,
            y,
            batch_size=int(hparams["batch_size"]),
            epochs=int(hparams["epochs"]),
            validation_data=(val_x, val_y),
            callbacks=[callback],
            verbose=0,
        )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=trialkit.LOG_FORMAT)
    main()
