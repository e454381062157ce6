"""A user's own ``model.fit`` with TrialkitCallback (run by tests/keras/test_callback.py, locally
and as an experiment's entrypoint). Arguments: epochs [report_period] [sleep_per_epoch]."""

import json
import logging
import os
import sys
import time

import numpy as np

import trialkit
from trialkit import core
from trialkit.keras import TrialkitCallback

if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras  # what tf.keras is under TF_USE_LEGACY_KERAS=1
else:
    import keras


def data(seed: int, n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], dtype="float32") > 0).astype("float32")
    return x, y


def build_model() -> object:
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [keras.Input(shape=(4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=["binary_accuracy"],
    )
    return model


class SlowEpochs(keras.callbacks.Callback):
    """Gives a test time to pause the experiment mid-training; logs where each epoch starts."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def on_epoch_begin(self, epoch: int, logs: object = None) -> None:
        print(f"EPOCH_BEGIN {epoch}", flush=True)
        time.sleep(self.seconds)


def main() -> None:
    epochs = int(sys.argv[1])
    period: str | int = sys.argv[2] if len(sys.argv) > 2 else "epoch"
    period = int(period) if str(period).isdigit() else period
    sleep = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    info = trialkit.get_cluster_info()
    checkpoint = info.latest_checkpoint if info else os.environ.get("TEST_CHECKPOINT")
    continue_id = info.trial.trial_id if info else os.environ.get("TEST_CONTINUE_ID", "local")
    x, y = data(0)
    vx, vy = data(1, 32)
    model = build_model()
    with core.init() as core_context:
        cb = TrialkitCallback(
            core_context, checkpoint, continue_id, train_metrics_report_period=period
        )
        model.fit(
            x,
            y,
            batch_size=16,
            epochs=epochs,
            validation_data=(vx, vy),
            verbose=0,
            callbacks=[cb, SlowEpochs(sleep)],
            shuffle=False,
        )
    out = os.environ.get("TEST_WEIGHTS_OUT")
    if out:
        weights = [np.asarray(w).tolist() for w in model.get_weights()]
        with open(out, "w") as f:
            json.dump({"weights": weights, "steps": cb.steps_completed}, f)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=trialkit.LOG_FORMAT)
    main()
