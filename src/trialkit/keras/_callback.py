"""TrialkitCallback: Determined 0.38's ``DeterminedCallback`` for users who keep their own
``model.fit``. It reports training and validation metrics, checkpoints every epoch, resumes from a
checkpoint, stops on preemption and reports searcher progress. It runs on every Keras 3 backend
(tensorflow, torch, jax) and on tf_keras (``TF_USE_LEGACY_KERAS=1``)."""

from __future__ import annotations

import logging
import pickle
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .. import core
from ..harness import NEVER, Boundaries, Epoch, report_unit
from ._keras import is_keras2, keras_module, restore_weights, save_optimizer_state

logger = logging.getLogger("trialkit.keras")

MODEL_WEIGHTS = "model.weights.h5"
OPTIMIZER_STATE = "optimizer-state.npz"
CALLBACK_STATE = "callback_state"
DETERMINED_WEIGHTS = "model_checkpoint"  # what Determined's DeterminedCallback writes


_keras = keras_module()
_LEGACY = is_keras2(_keras)


def _scalars(logs: dict[str, Any] | None) -> dict[str, Any]:
    """Keras logs as plain numbers (tensors and NumPy scalars converted; the rest dropped)."""
    out: dict[str, Any] = {}
    for key, value in (logs or {}).items():
        try:
            out[key] = float(np.asarray(value))
        except (TypeError, ValueError):
            logger.debug("metric %r is not a scalar; not reported", key)
    return out


class _ResumeAt:
    """tf_keras's hook for where ``fit`` starts (what BackupAndRestore installs)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def maybe_load_initial_counters_from_ckpt(
        self, steps_per_epoch: Any, initial_epoch: int, mode: Any = None
    ) -> tuple[int, int]:
        return self.epoch, 0


class TrialkitCallback(_keras.callbacks.Callback):  # type: ignore[misc,name-defined]
    """Report, checkpoint, resume and honour preemption inside the user's ``model.fit``.

    ``checkpoint``: a storage id to start from (``info.latest_checkpoint``). ``continue_id``: an
    id of this training run (the trial id): a checkpoint written under the same id resumes at its
    epoch, one from another id only warm-starts the weights. ``train_metrics_report_period``:
    ``"epoch"`` or a number of batches. ``checkpoint_epochs``: checkpoint every N epochs (0:
    only at the end of training). Do not combine with BackupAndRestore or ModelCheckpoint."""

    def __init__(
        self,
        core_context: core.Context,
        checkpoint: str | None = None,
        continue_id: int | str | None = None,
        *,
        train_metrics_report_period: str | int = "epoch",
        checkpoint_epochs: int = 1,
    ) -> None:
        super().__init__()
        if not isinstance(checkpoint_epochs, int) or checkpoint_epochs < 0:
            raise ValueError(
                f"checkpoint_epochs: got {checkpoint_epochs!r}; expected a number >= 0"
            )
        self._core = core_context
        self._checkpoint = checkpoint
        self._continue_id = continue_id
        self._boundaries = Boundaries(  # Keras validates and ends training itself
            checkpoint=Epoch(checkpoint_epochs) if checkpoint_epochs else NEVER,
            report=report_unit(train_metrics_report_period),
            stop_check=Epoch(1),
        )
        self._is_chief = core_context.distributed.rank == 0
        self._sharded = core_context.distributed.size > 1
        self.steps_completed = 0
        self._epoch = 0  # the epoch being trained
        self._last_train_epoch = -1
        self._last_ckpt_epoch = -1

    # Keras hooks ----------------------------------------------------------------------------------

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self._checkpoint is None:
            return
        with self._core.checkpoint.restore_path(self._checkpoint) as path:
            self.load_model(self.model, path, self._core.distributed)
            state = self._read_state(path)
        if state is None or state.get("continue_id") != self._continue_id:
            logger.info("warm start from checkpoint %s (weights only)", self._checkpoint)
            return
        self.steps_completed = int(state["steps_completed"])
        self._last_train_epoch = self._last_ckpt_epoch = int(state["epoch"])
        start = self._last_train_epoch + 1
        logger.info("resuming from checkpoint %s at epoch %d", self._checkpoint, start)
        if _LEGACY:
            self.model._training_state = _ResumeAt(start)
        else:
            self.model._initial_epoch = start

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.steps_completed += 1
        if self._boundaries.after_batch(self.steps_completed).report and self._is_chief:
            self._core.train.report_training_metrics(
                steps_completed=self.steps_completed, metrics=self._with_counters(logs)
            )

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._is_chief:
            self._core.train.report_validation_metrics(
                steps_completed=self.steps_completed, metrics=self._with_counters(logs)
            )

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._last_train_epoch = epoch
        due = self._boundaries.at_epoch_end(epoch + 1)
        if due.report and self._is_chief:
            train_logs = {k: v for k, v in (logs or {}).items() if not k.startswith("val_")}
            self._core.train.report_training_metrics(
                steps_completed=self.steps_completed, metrics=self._with_counters(train_logs)
            )
        epochs = (self.params or {}).get("epochs")
        if self._is_chief and epochs:
            self._core.train.report_progress(min(1.0, (epoch + 1) / epochs))
        if due.checkpoint:
            self._save()
        if due.stop_check and self._core.preempt.should_preempt():
            logger.info("preemption requested: stopping after epoch %d", epoch)
            self.model.stop_training = True

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._last_train_epoch > self._last_ckpt_epoch:
            self._save()
        if _LEGACY:
            self.model._training_state = None
        else:
            self.model._initial_epoch = None

    # Overridable save and load --------------------------------------------------------------------

    def save_model(
        self, model: Any, path: Path, distributed: core.DistributedContext | Any
    ) -> None:
        """Write the model's weights and optimizer state into ``path`` (override for others)."""
        model.save_weights(str(path / MODEL_WEIGHTS))
        save_optimizer_state(getattr(model, "optimizer", None), path / OPTIMIZER_STATE)

    def load_model(
        self, model: Any, path: Path, distributed: core.DistributedContext | Any
    ) -> None:
        """Restore what ``save_model`` wrote (override for other formats)."""
        weights = path / MODEL_WEIGHTS
        determined_weights = path / DETERMINED_WEIGHTS
        if not weights.exists() and Path(f"{determined_weights}.index").exists():
            if not _LEGACY:
                raise RuntimeError(
                    f"checkpoint {self._checkpoint} holds Determined's TF-format "
                    f"{DETERMINED_WEIGHTS}, which Keras 3 cannot read: load it with tf_keras "
                    "(TF_USE_LEGACY_KERAS=1)"
                )
            model.load_weights(str(determined_weights))  # written by Determined's callback
            return
        if not weights.exists():
            raise RuntimeError(f"checkpoint {self._checkpoint} has no {MODEL_WEIGHTS}")
        restore_weights(model, weights, path / OPTIMIZER_STATE, f"checkpoint {self._checkpoint}")

    # Internals ------------------------------------------------------------------------------------

    def _with_counters(self, logs: dict[str, Any] | None) -> dict[str, Any]:
        metrics = _scalars(logs)
        metrics.setdefault("epochs", self._epoch + 1)
        metrics.setdefault("batches", self.steps_completed)
        return metrics

    def _state(self) -> dict[str, Any]:
        return {
            "epoch": self._last_train_epoch,
            "steps_completed": self.steps_completed,
            "continue_id": self._continue_id,
        }

    @staticmethod
    def _read_state(path: Path) -> dict[str, Any] | None:
        file = path / CALLBACK_STATE
        if not file.exists():
            return None
        state = pickle.loads(file.read_bytes())
        return state if isinstance(state, dict) else None

    def _save(self) -> None:
        metadata = {"steps_completed": self.steps_completed, "epochs": self._last_train_epoch + 1}
        dist = self._core.distributed
        if not self._sharded:
            with self._core.checkpoint.store_path(metadata) as (path, _):
                self._write(path)
        else:
            with self._core.checkpoint.store_path(metadata, shard=True) as (path, _):
                if self._is_chief:
                    self._write(path)
                else:  # every worker takes part in the save; only the chief's files are kept
                    with tempfile.TemporaryDirectory() as scratch:
                        self.save_model(self.model, Path(scratch), dist)
        self._last_ckpt_epoch = self._last_train_epoch

    def _write(self, path: Path) -> None:
        self.save_model(self.model, path, self._core.distributed)
        (path / CALLBACK_STATE).write_bytes(pickle.dumps(self._state()))


DeterminedCallback = TrialkitCallback
