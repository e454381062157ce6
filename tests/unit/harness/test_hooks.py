"""Hooks fired on a trial's callbacks (harness/_hooks.py), through the shared loop: every callback in
order, with the hook's arguments; the pre-0.13 epoch hooks declared without ``epoch_idx`` still
run, with one FutureWarning per method."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.unit.harness.test_harness_loop import CountingStrategy, _settings
from trialkit import core
from trialkit.harness import Batch, Target, TrainLoop


class Current:
    """A callback declared as Determined documents it since 0.13."""

    def __init__(self, log: list[tuple[Any, ...]]) -> None:
        self.log = log

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        self.log.append(("current start", epoch_idx))

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        self.log.append(("current end", epoch_idx))

    def __getattr__(self, hook: str) -> Any:  # every other hook: nothing to do
        return lambda *args: None


def legacy_class() -> type[Current]:
    """A callback class with epoch hooks as written before 0.13 (no ``epoch_idx``), new at each
    call: the warning is given once per method in a process, and a test may run more than once."""

    class Legacy(Current):
        def on_training_epoch_start(self) -> None:  # type: ignore[override]
            self.log.append(("legacy start",))

        def on_training_epoch_end(self) -> None:  # type: ignore[override]
            self.log.append(("legacy end",))

    return Legacy


class WithCallbacks(CountingStrategy):
    def __init__(self, callbacks: dict[str, Any]) -> None:
        super().__init__()
        self._callbacks = callbacks

    def callbacks(self) -> dict[str, Any]:
        return self._callbacks


def _train_two_epochs(callbacks: dict[str, Any]) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught, core.init() as ctx:
        warnings.simplefilter("always")
        TrainLoop(ctx, WithCallbacks(callbacks), _settings()).run([Target(Batch(8))])
    return [w for w in caught if issubclass(w.category, FutureWarning)]


def test_epoch_hooks_get_the_epoch_and_legacy_ones_run_without_it_warned_once(
    trialkit_home: Path,
) -> None:
    log: list[tuple[Any, ...]] = []
    legacy = legacy_class()
    future = _train_two_epochs({"a": Current(log), "b": legacy(log)})
    assert log == [  # each callback in order, each epoch (4 batches an epoch)
        ("current start", 0), ("legacy start",), ("current end", 0), ("legacy end",),
        ("current start", 1), ("legacy start",), ("current end", 1), ("legacy end",),
    ]  # fmt: skip
    assert sorted(str(w.message) for w in future) == [  # once per method, not per call
        f"{legacy.__qualname__}.{hook}() takes no epoch_idx; declare it as (self, epoch_idx: int)"
        for hook in ("on_training_epoch_end", "on_training_epoch_start")
    ]
    log.clear()
    assert _train_two_epochs({"b": legacy(log)}) == []  # warned about already in this process
    assert log[:2] == [("legacy start",), ("legacy end",)]


def test_a_hook_that_is_a_plain_function_gets_the_arguments_it_declares(
    trialkit_home: Path,
) -> None:
    log: list[tuple[Any, ...]] = []
    current = Current(log)
    current.on_training_epoch_start = lambda: log.append(("no args",))  # type: ignore[method-assign]
    current.on_training_epoch_end = lambda idx: log.append(("end", idx))  # type: ignore[method-assign]
    assert _train_two_epochs({"a": current}) == []  # nothing to warn about: no method
    assert log[:4] == [("no args",), ("end", 0), ("no args",), ("end", 1)]


def test_only_the_epoch_hooks_may_leave_out_their_arguments(trialkit_home: Path) -> None:
    class LegacyCheckpoint(Current):
        def on_checkpoint_end(self) -> None:  # takes a path since it exists
            pass

    with pytest.raises(TypeError, match="on_checkpoint_end"):
        _train_two_epochs({"a": LegacyCheckpoint([])})
