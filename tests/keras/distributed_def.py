"""A TFKerasTrial for the multi-worker tests: iris-shaped data in a fixed order (so one worker's
global batch is the union of the workers' shards), no dropout, Adam, op determinism, and a
callback that slows each batch so a pause or a kill lands mid-training."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow import keras  # Keras 3, or tf_keras under TF_USE_LEGACY_KERAS=1

from trialkit import keras as tk

tf.config.experimental.enable_op_determinism()
DATA = Path(__file__).resolve().parent / "iris.csv"


class Slow(keras.callbacks.Callback):
    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        time.sleep(self.seconds)


class DistTrial(tk.TFKerasTrial):
    def __init__(self, context: tk.TFKerasTrialContext) -> None:
        self.context = context
        dist = context.distributed
        print(
            f"worker rank={dist.rank} of {dist.size} pid={os.getpid()} "
            f"per-slot batch={context.get_per_slot_batch_size()}",
            flush=True,
        )
        table = np.loadtxt(DATA, delimiter=",", skiprows=1, dtype="float32")
        x, y = table[:, :4], keras.utils.to_categorical(table[:, 4].astype(int), 3)
        held_out = np.arange(len(x)) % 5 == 4  # sorted by species: 10 of each held out
        self.train, self.validation = (x[~held_out], y[~held_out]), (x[held_out], y[held_out])
        context.configure_fit(shuffle=False)

    def build_model(self) -> keras.Model:
        model = self.context.wrap_model(
            keras.Sequential(
                [
                    keras.Input(shape=(4,)),
                    keras.layers.Dense(16, activation="relu"),
                    keras.layers.Dense(3, activation="softmax"),
                ]
            )
        )
        model.compile(
            optimizer=self.context.wrap_optimizer(keras.optimizers.Adam(0.01)),
            loss="categorical_crossentropy",
            metrics=["categorical_accuracy"],
        )
        return model

    def build_training_data_loader(self) -> Any:
        return self.train

    def build_validation_data_loader(self) -> Any:
        return self.validation

    def keras_callbacks(self) -> list[Any]:
        return [Slow(float(self.context.get_hparam("batch_sleep")))]
