"""A TFKerasTrial as written for Determined 0.37: ``import determined as det`` and
``det.keras.callbacks`` (TensorBoard, EarlyStopping, ReduceLROnPlateau and a stateful Callback
that records every hook and adds a file to each checkpoint)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import determined as det
import numpy as np
import tensorflow as tf
from determined import keras


class Recorder(det.keras.callbacks.Callback):
    """Stateful: what it saw, kept across pauses through get_state/load_state."""

    def __init__(self) -> None:
        super().__init__()
        self.begins: list[list[Any]] = []
        self.ends: list[int] = []
        self.validations: list[list[str]] = []
        self.uploads: list[str] = []
        self.loaded: Any = None

    def on_train_workload_begin(self, total_batches_trained: int, batches_requested: Any,
                                logs: dict) -> None:  # fmt: skip
        self.begins.append([total_batches_trained, batches_requested])

    def on_train_workload_end(self, total_batches_trained: int, logs: dict) -> None:
        assert "loss" in logs, logs
        self.ends.append(total_batches_trained)

    def on_test_end(self, logs: Any = None) -> None:
        self.validations.append(sorted(logs or {}))

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        (Path(checkpoint_dir) / "recorder.json").write_text(json.dumps(self.get_state()))

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        self.uploads.append(uuid)

    def get_state(self) -> Any:
        return {"ends": list(self.ends), "validations": len(self.validations)}

    def load_state(self, state: Any) -> None:
        self.loaded = state
        self.ends = list(state["ends"])


class CallbacksTrial(keras.TFKerasTrial):
    def __init__(self, context: keras.TFKerasTrialContext) -> None:
        self.context = context
        rng = np.random.default_rng(0)
        x = rng.normal(size=(32, 2)).astype("float32")
        self.data = (x, (x @ np.array([[1.0], [-2.0]], dtype="float32")).astype("float32"))
        self.recorder = Recorder()
        self.early = det.keras.callbacks.EarlyStopping(monitor="val_loss", patience=100)
        self.plateau = det.keras.callbacks.ReduceLROnPlateau(
            monitor="val_loss", patience=1, factor=0.5, min_delta=1e9
        )
        self.tensorboard = (
            det.keras.callbacks.TensorBoard(update_freq="epoch")
            if context.get_hparams().get("tensorboard", True)
            else None
        )

    def build_model(self) -> Any:
        model = self.context.wrap_model(
            tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
        )
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
        return model

    def build_training_data_loader(self) -> Any:
        return self.data

    def build_validation_data_loader(self) -> Any:
        return self.data

    def keras_callbacks(self) -> list:
        found = [self.recorder, self.early, self.plateau, self.tensorboard]
        return [cb for cb in found if cb is not None]
