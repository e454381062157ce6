"""``Hooks``: fires a callback hook on every callback of a trial. The loop owns the one instance
of a trial and hands it to its strategy (``Strategy.use_hooks``), so the loop's hooks and the
strategy's (validation, checkpoint save and load; the Keras strategy's per-batch and
end-of-training hooks) fire through one object; the one place the pre-0.13 zero-argument epoch
hooks are tolerated."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Mapping
from typing import Any

_EPOCH_HOOKS = ("on_training_epoch_start", "on_training_epoch_end")


@functools.lru_cache(maxsize=256)
def _no_args(func: Any) -> bool:
    return len(inspect.signature(func).parameters) <= 1  # just self


def _takes_no_args(method: Any) -> bool:
    """A bound method declared without parameters (warned about once per function)."""
    func = getattr(method, "__func__", None)
    if func is None:  # a plain function stored on the callback: no self to discount
        return not inspect.signature(method).parameters
    if not _no_args(func):
        return False
    if func not in _warned_legacy:
        _warned_legacy.add(func)
        warnings.warn(
            f"{func.__qualname__}() takes no epoch_idx; declare it as (self, epoch_idx: int)",
            FutureWarning,
            stacklevel=3,
        )
    return True


_warned_legacy: set[Any] = set()


class Hooks:
    """Calls ``hook(*args)`` on each callback ``callbacks()`` returns, in order."""

    def __init__(self, callbacks: Callable[[], Mapping[str, Any]]) -> None:
        self._callbacks = callbacks

    def fire(self, hook: str, *args: Any) -> None:
        for cb in self._callbacks().values():
            fn = getattr(cb, hook)
            if args and hook in _EPOCH_HOOKS and _takes_no_args(fn):
                fn()  # the pre-0.13 zero-argument epoch hooks, tolerated as Determined does
            else:
                fn(*args)
