"""Keras callbacks on the shared loop: the loop's hooks become the calls ``model.fit`` makes
(``on_train_begin``, ``on_epoch_begin``/``end``, ...) plus Determined's TFKerasTrial hooks
(``on_train_workload_begin``/``end``, ``on_checkpoint_*``, ``get_state``/``load_state``; see
``trialkit.keras.callbacks``). Keras is not imported here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

_tensorboard_dir: list[Path | None] = [None]


def set_tensorboard_dir(path: Path | None) -> None:
    """Where ``callbacks.TensorBoard`` writes in this process (the trial's TensorBoard path)."""
    _tensorboard_dir[0] = path


def tensorboard_dir() -> Path | None:
    """The trial's TensorBoard directory, once the harness has set it."""
    return _tensorboard_dir[0]


class KerasHooks:
    """The one loop callback of a TFKerasTrial; forwards to the user's Keras callbacks. Every
    call reaches it through the loop's hook dispatcher: the loop's hooks, and those the Keras
    strategy fires around each batch, at the end of its checkpoint save and of training."""

    def __init__(self, user: list[Any], cb_list: Any) -> None:
        """``cb_list``: Keras's ``CallbackList`` of the ``user`` callbacks (None without any)."""
        self.user = user
        self.cb_list = cb_list
        self.logs: dict[str, Any] = {}
        self.scheduling_unit = 1
        self._batches_trained = 0
        self._began = False
        self._workload_open = False
        self._pending_state: dict[int, Any] | None = None
        self._test_end: Callable[..., Any] | None = None
        if cb_list is not None:
            self._hold_test_end(cb_list)

    def _each(self, hook: str) -> list[Callable[..., Any]]:
        return [getattr(cb, hook) for cb in self.user if callable(getattr(cb, hook, None))]

    def _hold_test_end(self, cb_list: Any) -> None:
        """Keep ``evaluate``'s own ``on_test_end`` (raw names) from reaching the callbacks;
        ``on_validation_end`` makes the call with the reported metrics instead."""
        self._test_end = cb_list.on_test_end
        cb_list.on_test_end = lambda logs=None: None

    # The loop's hooks -----------------------------------------------------------------------------

    def on_trial_startup(self, first_batch_idx: int, checkpoint_uuid: str | None) -> None:
        pass

    def on_trial_shutdown(self) -> None:
        pass

    def on_training_start(self) -> None:
        if self.cb_list is not None:
            self.cb_list.on_train_begin()
            self._began = True
        # After on_train_begin, which resets Keras callbacks (Determined's delayed load).
        if self._pending_state is not None:
            self._apply_state(self._pending_state)
            self._pending_state = None

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        if self.cb_list is not None:
            self.cb_list.on_epoch_begin(epoch_idx)

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        if self.cb_list is not None:
            self.cb_list.on_epoch_end(epoch_idx, dict(self.logs))

    def on_training_workload_end(
        self, avg_metrics: dict[str, Any], batch_metrics: list[dict[str, Any]]
    ) -> None:
        self.logs.update({k: v for k, v in avg_metrics.items() if v is not None})
        self._workload_open = False
        for fn in self._each("on_train_workload_end"):
            fn(self._batches_trained, dict(avg_metrics))

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        pass  # the callbacks' on_checkpoint_end ran at on_checkpoint_save_end

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        for fn in self._each("on_checkpoint_write_end"):
            fn(checkpoint_dir)

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        for fn in self._each("on_checkpoint_upload_end"):
            fn(uuid)

    # The Keras strategy's hooks (the batch hooks only when there are user callbacks) -----------

    def on_training_batch_start(self, batch_idx: int, step: int) -> None:
        """Before each batch (``step`` within its epoch): opens a workload, as Determined calls
        its begin lazily, then Keras's ``on_train_batch_begin``."""
        if not self._workload_open:
            self._workload_open = True
            requested = self.scheduling_unit - batch_idx % self.scheduling_unit
            for fn in self._each("on_train_workload_begin"):
                fn(batch_idx, requested, {})
        self.cb_list.on_train_batch_begin(step)

    def on_training_batch_end(self, batch_idx: int, step: int, logs: dict[str, Any]) -> None:
        self._batches_trained = batch_idx + 1
        self.cb_list.on_train_batch_end(step, logs)

    def on_validation_end(self, metrics: dict[str, Any]) -> None:
        """After ``evaluate``: Keras's ``on_test_end`` with the ``val_`` metrics, as Determined
        gives them (the one ``evaluate`` makes itself is held back)."""
        self.logs.update(metrics)
        if self._test_end is not None:
            self._test_end(dict(metrics))

    def on_checkpoint_save_end(self, checkpoint_dir: str) -> None:
        """The Keras files are written (the harness's trial state is not yet)."""
        for fn in self._each("on_checkpoint_end"):
            fn(checkpoint_dir)

    def on_training_end(self) -> None:
        if self._began:
            self.cb_list.on_train_end(dict(self.logs))
            self._began = False

    # The callbacks' state, which the strategy saves and loads (as PyTorch's state_dicts) -------

    def state(self) -> dict[int, Any]:
        return {i: cb.get_state() for i, cb in enumerate(self.user) if hasattr(cb, "get_state")}

    def load_state(self, state: Any) -> None:
        """Keep a checkpoint's callback state until training starts. Determined's own file
        (``{"self": ..., "callbacks": [...]}``) is read too."""
        if isinstance(state, dict) and isinstance(state.get("callbacks"), list):
            state = dict(enumerate(state["callbacks"]))
        if isinstance(state, dict):
            self._pending_state = state

    def _apply_state(self, state: dict[int, Any]) -> None:
        for i, cb in enumerate(self.user):
            if state.get(i) is not None and hasattr(cb, "load_state"):
                cb.load_state(state[i])
