"""``Boundaries``: after each batch and at each epoch end, what is due: validate, checkpoint,
report training metrics, the training target reached, a stop (preemption) check.

The one boundary decision of every loop: the ``TrainLoop`` of the Trial harnesses and the Keras
and Lightning callbacks push their progress in and act on the ``Due`` they get back."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, NamedTuple

from ._report import report_period
from ._units import NEVER, Batch, Epoch, TrainUnit


class Due(NamedTuple):
    """What a boundary calls for."""

    validate: bool = False
    checkpoint: bool = False
    report: bool = False
    target: bool = False
    stop_check: bool = False

    def __or__(self, other: object) -> Due:  # type: ignore[override]
        """Both boundaries' demands (a batch that also ends an epoch)."""
        assert isinstance(other, Due)
        return _DUE[_mask(self) | _mask(other)]


def _mask(due: Due) -> int:
    return sum(bit << i for i, bit in enumerate(due))


#: Every ``Due``, indexed by its bit mask: the per-batch decision allocates nothing.
_DUE = tuple(Due(*reversed(bits)) for bits in itertools.product((False, True), repeat=5))
NOTHING = _DUE[0]
STOP_CHECK_ONLY = _DUE[1 << Due._fields.index("stop_check")]

_Rule = Callable[[int], bool]
_TARGET = 1 << Due._fields.index("target")


def _rule(period: TrainUnit) -> _Rule:
    """``fires(count)`` for a period that neither always nor never fires."""
    value = period.value
    if isinstance(value, int):
        return lambda n: n % value == 0
    return period.should_stop


def _compile(periods: tuple[TrainUnit, ...], kind: type[TrainUnit]) -> tuple[int, tuple[Any, ...]]:
    """The bits of the periods counted in ``kind`` that fire at every count, and a
    ``(bit, fires)`` rule for each other one: the per-batch decision calls only those."""
    always, rules = 0, []
    for i, period in enumerate(periods):
        if isinstance(period, Epoch) != (kind is Epoch) or period is NEVER:
            continue
        if isinstance(period.value, int) and period.value <= 1:  # every count (< 1: always)
            always |= 1 << i
        else:
            rules.append((1 << i, _rule(period)))
    return always, tuple(rules)


def report_unit(value: Any) -> TrainUnit:
    """A callback's ``train_metrics_report_period`` (``"epoch"`` or batches) as a period."""
    period = report_period(value)
    return Epoch(1) if period == "epoch" else Batch(int(period))


class Boundaries:
    """Periods in batches or epochs (``NEVER``: not this loop's business) and a target."""

    def __init__(
        self,
        *,
        validation: TrainUnit = NEVER,
        checkpoint: TrainUnit = NEVER,
        report: TrainUnit = NEVER,
        stop_check: TrainUnit = NEVER,
        target: int | None = None,
    ) -> None:
        periods = (validation, checkpoint, report, NEVER, stop_check)  # in Due's field order
        self._batch_always, self._batch_rules = _compile(periods, Batch)
        self._epoch_always, self._epoch_rules = _compile(periods, Epoch)
        self.target = target

    def reached(self, batches: int) -> bool:
        """Whether training has reached the target (never, without one)."""
        return self.target is not None and batches >= self.target

    def after_batch(self, batches: int) -> Due:
        """What is due once ``batches`` batches are trained in all."""
        mask = self._batch_always
        for bit, fires in self._batch_rules:
            if fires(batches):
                mask |= bit
        target = self.target
        if target is not None and batches >= target:
            mask |= _TARGET
        return _DUE[mask]

    def at_epoch_end(self, epochs: int) -> Due:
        """What is due once ``epochs`` epochs are trained in all."""
        mask = self._epoch_always
        for bit, fires in self._epoch_rules:
            if fires(epochs):
                mask |= bit
        return _DUE[mask]
