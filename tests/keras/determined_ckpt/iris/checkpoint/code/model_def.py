"""Determined's iris TFKerasTrial, ported to Keras 3: a small dense network over 4 features and
3 classes, on Fisher's 150-row iris data set shipped beside this file (``iris.csv``, see README)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from tensorflow import keras  # Keras 3, or tf_keras under TF_USE_LEGACY_KERAS=1

from trialkit import keras as tk

DATA = Path(__file__).resolve().parent / "iris.csv"
NUM_CLASSES = 3


def load_iris(every: int = 5) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """(train, validation) as (features, one-hot labels). The file is sorted by species, so
    every ``every``-th row is held out: 120 training and 30 validation rows, 10 per species."""
    table = np.loadtxt(DATA, delimiter=",", skiprows=1, dtype="float32")
    x, y = table[:, :4], keras.utils.to_categorical(table[:, 4].astype(int), NUM_CLASSES)
    held_out = np.arange(len(x)) % every == every - 1
    return (x[~held_out], y[~held_out]), (x[held_out], y[held_out])


class IrisTrial(tk.TFKerasTrial):
    def __init__(self, context: tk.TFKerasTrialContext) -> None:
        self.context = context
        self.train, self.validation = load_iris()

    def build_model(self) -> keras.Model:
        model = keras.Sequential(
            [
                keras.Input(shape=(4,)),
                keras.layers.Dense(self.context.get_hparam("layer1_dense_size"), activation="relu"),
                keras.layers.Dense(NUM_CLASSES, activation="softmax"),
            ]
        )
        model = self.context.wrap_model(model)
        optimizer = self.context.wrap_optimizer(
            keras.optimizers.RMSprop(learning_rate=self.context.get_hparam("learning_rate"))
        )
        model.compile(
            optimizer=optimizer,
            loss="categorical_crossentropy",
            metrics=[keras.metrics.CategoricalAccuracy()],
        )
        return model

    def build_training_data_loader(self) -> Any:
        return self.train

    def build_validation_data_loader(self) -> Any:
        return self.validation
