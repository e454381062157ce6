"""A TFKerasTrial for the resume tests: the iris data, dropout (so the Keras seed
generators matter), Adam (so the optimizer state matters), op determinism, and a callback that
slows each batch so a pause lands mid-training."""

from __future__ import annotations

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
        self.epochs_begun = 0
        self.workloads = 0

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        time.sleep(self.seconds)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self.epochs_begun += 1

    def on_train_workload_end(self, batches_trained: int, logs: dict[str, Any]) -> None:
        self.workloads += 1
        print(f"workload end at {batches_trained}: loss={logs['loss']:.4f}", flush=True)

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        weights = Path(checkpoint_dir) / "determined-keras-model.weights.h5"
        print(f"checkpoint end: weights written={weights.exists()}", flush=True)


class Batches(getattr(keras.utils, "PyDataset", keras.utils.Sequence)):  # tf_keras: Sequence
    """The arrays as a PyDataset of fixed-size batches."""

    def __init__(self, x: Any, y: Any, batch_size: int) -> None:
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self) -> int:
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        rows = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return self.x[rows], self.y[rows]


class ResumableTrial(tk.TFKerasTrial):
    def __init__(self, context: tk.TFKerasTrialContext) -> None:
        self.context = context
        table = np.loadtxt(DATA, delimiter=",", skiprows=1, dtype="float32")
        x, y = table[:, :4], keras.utils.to_categorical(table[:, 4].astype(int), 3)
        held_out = np.arange(len(x)) % 5 == 4  # sorted by species: 10 of each held out
        self.train, self.validation = (x[~held_out], y[~held_out]), (x[held_out], y[held_out])

    def build_model(self) -> keras.Model:
        model = self.context.wrap_model(
            keras.Sequential(
                [
                    keras.Input(shape=(4,)),
                    keras.layers.Dense(16, activation="relu"),
                    keras.layers.Dropout(0.3),
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
        kind = self.context.get_hparam("data")
        if kind == "dataset":
            ds = tf.data.Dataset.from_tensor_slices(self.train)
            return self.context.wrap_dataset(ds.batch(self.context.get_per_slot_batch_size()))
        if kind == "pydataset":
            return Batches(*self.train, self.context.get_per_slot_batch_size())
        return self.train

    def build_validation_data_loader(self) -> Any:
        return self.validation

    def keras_callbacks(self) -> list[Any]:
        return [Slow(float(self.context.get_hparam("batch_sleep")))]
