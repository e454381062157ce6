"""Keras callbacks on the shared loop: the loop's hooks become the calls ``model.fit`` makes
(``on_train_begin``, ``on_epoch_begin``/``end``, ...) plus Determined's TFKerasTrial hooks
(``on_train_workload_end``, ``on_checkpoint_end``, ``get_state``/``load_state``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class KerasHooks:
    """The one loop callback of a TFKerasTrial; forwards to the user's Keras callbacks."""

    def __init__(self, model: Any, user: list[Any]) -> None:
        self.model = model
        self.user = user
        self.cb_list: Any = None
        self.logs: dict[str, Any] = {}
        self.batches_trained: Callable[[], int] = lambda: 0
        self._began = False

    def _each(self, hook: str) -> list[Callable[..., Any]]:
        return [getattr(cb, hook) for cb in self.user if callable(getattr(cb, hook, None))]

    def set_training_cb(self, cb_list: Any) -> None:
        self.cb_list = cb_list

    # The loop's hooks -----------------------------------------------------------------------------

    def on_trial_startup(self, first_batch_idx: int, checkpoint_uuid: str | None) -> None:
        pass

    def on_trial_shutdown(self) -> None:
        pass

    def on_training_start(self) -> None:
        if self.cb_list is not None:
            self.cb_list.on_train_begin()
            self._began = True

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
        for fn in self._each("on_train_workload_end"):
            fn(self.batches_trained(), dict(avg_metrics))

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        pass  # called by checkpoint_written, with the Keras files in place

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        pass

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        pass

    # From the strategy ----------------------------------------------------------------------------

    def validated(self, metrics: dict[str, Any]) -> None:
        self.logs.update(metrics)

    def checkpoint_written(self, path: str) -> None:
        for fn in self._each("on_checkpoint_end"):
            fn(path)

    def train_end(self) -> None:
        if self._began:
            self.cb_list.on_train_end(dict(self.logs))
            self._began = False

    def state(self) -> dict[int, Any]:
        return {i: cb.get_state() for i, cb in enumerate(self.user) if hasattr(cb, "get_state")}

    def load_state(self, state: dict[int, Any]) -> None:
        for i, cb in enumerate(self.user):
            if i in state and hasattr(cb, "load_state"):
                cb.load_state(state[i])
