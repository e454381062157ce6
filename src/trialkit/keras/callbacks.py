"""``det.keras.callbacks``: Determined's Keras callbacks for ``TFKerasTrial.keras_callbacks()``.

``Callback`` adds the harness's hooks to a Keras callback: ``on_train_workload_begin/end`` around
each reporting period (``scheduling_unit`` batches, or less before a validation, checkpoint or
the searcher's length), ``on_checkpoint_end``/``on_checkpoint_write_end`` with the checkpoint's
directory, ``on_checkpoint_upload_end`` with its storage id, and ``get_state``/``load_state``:
the state is saved in every checkpoint and given back on resume, after ``on_train_begin``.
``EarlyStopping`` and ``ReduceLROnPlateau`` act after each validation (``on_test_end``, with the
``val_`` metrics) rather than each epoch, and keep their counters across pauses; ``TensorBoard``
writes into the trial's TensorBoard directory with one TensorBoard "epoch" per workload.
Importing this module imports Keras (tf_keras when ``TF_USE_LEGACY_KERAS`` is set)."""

from __future__ import annotations

import importlib.util
import logging
from typing import Any

from ._callbacks import tensorboard_dir
from ._keras import keras_module

logger = logging.getLogger("trialkit.keras")

_keras = keras_module()


class Callback(_keras.callbacks.Callback):  # type: ignore[misc,name-defined]
    """A Keras callback with Determined's TFKerasTrial hooks (all no-ops here)."""

    def on_train_workload_begin(
        self, total_batches_trained: int, batches_requested: int | None, logs: dict[str, Any]
    ) -> None:
        """Before a workload: ``batches_requested`` is at most ``scheduling_unit``."""

    def on_train_workload_end(self, total_batches_trained: int, logs: dict[str, Any]) -> None:
        """After a workload, with its averaged training metrics."""

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        """The checkpoint's files are written; files added to ``checkpoint_dir`` are kept."""

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        """Right after ``on_checkpoint_end`` and the trial state's write: every file of the
        checkpoint is in ``checkpoint_dir`` (the PyTorchCallback name)."""

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        """The checkpoint is stored as ``uuid``."""

    def get_state(self) -> Any:
        """A picklable state, saved in each checkpoint."""
        return None

    def load_state(self, state: Any) -> None:
        """Take back what ``get_state`` returned, when training resumes from a checkpoint."""


class _ValidationDriven(Callback):
    """A Keras epoch-end callback run after each validation instead (``on_test_end``, with the
    ``val_`` metrics), whose ``_STATE`` attributes are saved and restored."""

    _KERAS: Any
    _STATE: tuple[str, ...]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._KERAS.__init__(self, *args, **kwargs)  # no super(): a diamond with Keras's class
        self.test_end_count = 0

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        pass  # epochs carry no validation metrics in the harness: validations drive it

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        self._KERAS.on_epoch_end(self, self.test_end_count, logs)
        self.test_end_count += 1

    def get_state(self) -> Any:
        return {n: getattr(self, n) for n in self._STATE if hasattr(self, n)}

    def load_state(self, state: Any) -> None:
        for name in self._STATE:
            if isinstance(state, dict) and name in state:
                setattr(self, name, state[name])


class EarlyStopping(_ValidationDriven, _keras.callbacks.EarlyStopping):  # type: ignore[misc,name-defined]
    """Keras's EarlyStopping, checked after every validation (``min_validation_period``) and
    resumable: its patience counter, best value and best weights survive a pause."""

    _KERAS = _keras.callbacks.EarlyStopping
    _STATE = ("wait", "stopped_epoch", "best", "best_weights", "best_epoch", "test_end_count")


class ReduceLROnPlateau(_ValidationDriven, _keras.callbacks.ReduceLROnPlateau):  # type: ignore[misc,name-defined]
    """Keras's ReduceLROnPlateau, checked after every validation and resumable (its wait and
    cooldown counters and best value survive a pause; the rate itself is optimizer state)."""

    _KERAS = _keras.callbacks.ReduceLROnPlateau
    _STATE = ("wait", "cooldown_counter", "best", "test_end_count")


class TensorBoard(_keras.callbacks.TensorBoard, Callback):  # type: ignore[misc,name-defined]
    """Keras's TensorBoard callback writing into the trial's TensorBoard directory (a
    ``log_dir`` argument is ignored, as in Determined); each workload is one TensorBoard epoch,
    numbered across pauses."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if importlib.util.find_spec("tensorboard") is None:  # Keras's callback fails late
            raise ImportError(
                "det.keras.callbacks.TensorBoard needs the tensorboard package: "
                "pip install tensorboard (next to tensorflow)"
            )
        user_dir = kwargs.pop("log_dir", None)
        if args:  # log_dir is Keras's first positional argument
            user_dir, args = args[0], args[1:]
        harness_dir = tensorboard_dir()
        if user_dir is not None and harness_dir is not None:
            logger.warning(
                "log_dir=%s given to det.keras.callbacks.TensorBoard is ignored: it writes to %s",
                user_dir,
                harness_dir,
            )
        log_dir = str(harness_dir) if harness_dir is not None else (user_dir or "logs")
        _keras.callbacks.TensorBoard.__init__(self, log_dir, *args, **kwargs)
        self.workload_end_count = 0

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        pass  # workloads are its epochs

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_train_workload_begin(
        self, total_batches_trained: int, batches_requested: int | None, logs: dict[str, Any]
    ) -> None:
        _keras.callbacks.TensorBoard.on_epoch_begin(self, self.workload_end_count, logs)

    def on_train_workload_end(self, total_batches_trained: int, logs: dict[str, Any]) -> None:
        _keras.callbacks.TensorBoard.on_epoch_end(self, self.workload_end_count, logs)
        self.workload_end_count += 1
        for writer in self._writers.values():
            writer.flush()  # on disk at each report, for the trial's TensorBoard upload

    def get_state(self) -> Any:
        return {"workload_end_count": self.workload_end_count}

    def load_state(self, state: Any) -> None:
        self.workload_end_count = int(state["workload_end_count"])


__all__ = ["Callback", "EarlyStopping", "ReduceLROnPlateau", "TensorBoard"]
