"""The order in which a TFKerasTrial's Keras callbacks run on the shared loop, pinned hook by
hook: Keras's own hooks, Determined's workload and checkpoint hooks, and where the checkpoint
hooks fall against the harness writing its trial state (``on_checkpoint_end`` before it, as the
Keras files are in place; ``on_checkpoint_write_end`` after it), on a fresh run and a resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tensorflow", reason="TFKerasTrial needs tensorflow (tox -e tensorflow)")

from trialkit import core  # noqa: E402
from trialkit.harness import TRIAL_STATE, Batch, LoopSettings, Target, TrainLoop  # noqa: E402
from trialkit.keras import TFKerasTrial, TFKerasTrialContext  # noqa: E402
from trialkit.keras._keras import keras_module  # noqa: E402
from trialkit.keras._run import seed_all  # noqa: E402
from trialkit.keras._strategy import KerasStrategy  # noqa: E402
from trialkit.keras.callbacks import Callback  # noqa: E402


class OrderRecorder(Callback):  # type: ignore[misc]
    """Records each hook as it runs; a checkpoint hook also says whether the trial state
    file is in the checkpoint directory yet."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    @staticmethod
    def _state_written(checkpoint_dir: str) -> str:
        return "state" if (Path(checkpoint_dir) / TRIAL_STATE).exists() else "no state"

    def on_train_begin(self, logs: Any = None) -> None:
        self.events.append("train_begin")

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self.events.append(f"epoch_begin {epoch}")

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self.events.append(f"batch_begin {batch}")

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.events.append(f"batch_end {batch} {sorted(logs or {})}")

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.events.append(f"epoch_end {epoch} {sorted(logs or {})}")

    def on_test_end(self, logs: Any = None) -> None:
        self.events.append(f"test_end {sorted(logs or {})}")

    def on_train_end(self, logs: Any = None) -> None:
        self.events.append(f"train_end {sorted(logs or {})}")

    def on_train_workload_begin(
        self, total_batches_trained: int, batches_requested: int | None, logs: dict[str, Any]
    ) -> None:
        self.events.append(f"workload_begin {total_batches_trained} {batches_requested}")

    def on_train_workload_end(self, total_batches_trained: int, logs: dict[str, Any]) -> None:
        self.events.append(f"workload_end {total_batches_trained} {sorted(logs)}")

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        self.events.append(f"checkpoint_end {self._state_written(checkpoint_dir)}")

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        self.events.append(f"checkpoint_write_end {self._state_written(checkpoint_dir)}")

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        self.events.append("checkpoint_upload_end")

    def get_state(self) -> Any:
        self.events.append("get_state")
        return len(self.events)

    def load_state(self, state: Any) -> None:
        self.events.append(f"load_state {state}")


class LineTrial(TFKerasTrial):
    """y = 2x on 8 rows: 4 batches an epoch at batch size 2."""

    def __init__(self, context: TFKerasTrialContext) -> None:
        self.context = context
        x = np.arange(8, dtype="float32").reshape(8, 1)
        self.data = (x, 2 * x)
        self.recorder = OrderRecorder()

    def build_model(self) -> Any:
        keras = keras_module()
        model = self.context.wrap_model(
            keras.Sequential([keras.Input(shape=(1,)), keras.layers.Dense(1)])
        )
        model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
        return model

    def build_training_data_loader(self) -> Any:
        return self.data

    def build_validation_data_loader(self) -> Any:
        return self.data

    def keras_callbacks(self) -> list[Any]:
        return [self.recorder]


def _train(batches: int, checkpoint: str | None = None) -> tuple[list[str], str | None]:
    """One run of trial 3 to ``batches`` batches: report every 2, validate every 3,
    checkpoint every 4 (and at the end); the recorded hooks and the last checkpoint."""
    seed_all(3)
    with core.init() as core_context:
        hparams = {"global_batch_size": 2}
        context = TFKerasTrialContext(core_context, hparams=hparams, exp_conf={}, trial_seed=3)
        trial = LineTrial(context)
        strategy = KerasStrategy(trial, context)
        settings = LoopSettings(
            validation_period=Batch(3),
            checkpoint_period=Batch(4),
            reporting_period=Batch(2),
            checkpoint_policy="none",
            trial_id=3,
        )
        loop = TrainLoop(core_context, strategy, settings)
        strategy.keras_callback.scheduling_unit = 2
        loop.run([Target(Batch(batches))], checkpoint)
    return trial.recorder.events, loop.last_checkpoint


TRAIN = "['loss']"
WORKLOAD = TRAIN  # the loop's averages of the workload's batches
VAL = "['val_loss']"
EPOCH = "['loss', 'val_loss']"  # the latest workload's and validation's logs


def test_keras_hooks_run_in_order_around_the_trial_state_write(trialkit_home: Path) -> None:
    events, uuid = _train(6)
    assert events == [
        "train_begin",
        "epoch_begin 0",
        "workload_begin 0 2",
        "batch_begin 0",
        f"batch_end 0 {TRAIN}",
        "batch_begin 1",
        f"batch_end 1 {TRAIN}",
        f"workload_end 2 {WORKLOAD}",
        "workload_begin 2 2",
        "batch_begin 2",
        f"batch_end 2 {TRAIN}",
        f"workload_end 3 {WORKLOAD}",
        f"test_end {VAL}",
        "workload_begin 3 1",
        "batch_begin 3",
        f"batch_end 3 {TRAIN}",
        f"epoch_end 0 {EPOCH}",
        f"workload_end 4 {WORKLOAD}",
        "get_state",
        "checkpoint_end no state",
        "checkpoint_write_end state",
        "checkpoint_upload_end",
        "epoch_begin 1",
        "workload_begin 4 2",
        "batch_begin 0",
        f"batch_end 0 {TRAIN}",
        "batch_begin 1",
        f"batch_end 1 {TRAIN}",
        f"workload_end 6 {WORKLOAD}",
        f"test_end {VAL}",
        "get_state",
        "checkpoint_end no state",
        "checkpoint_write_end state",
        "checkpoint_upload_end",
        f"train_end {EPOCH}",
    ]

    resumed, _ = _train(8, checkpoint=uuid)
    assert resumed == [
        "train_begin",
        "load_state 31",  # after Keras's on_train_begin, which resets Keras's callbacks
        "workload_begin 6 2",
        "batch_begin 2",
        f"batch_end 2 {TRAIN}",
        "batch_begin 3",
        f"batch_end 3 {TRAIN}",
        "epoch_end 1 []",  # the resumed run has no workload or validation logs yet
        f"workload_end 8 {WORKLOAD}",
        "get_state",  # the checkpoint period ends at 8; the final validation comes after it
        "checkpoint_end no state",
        "checkpoint_write_end state",
        "checkpoint_upload_end",
        f"test_end {VAL}",
        f"train_end {EPOCH}",
    ]
