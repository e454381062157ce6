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

_Rule = Callable[[int], bool]


def _never(_: int) -> bool:
    return False


def _rule(period: TrainUnit, kind: type[TrainUnit]) -> _Rule:
    """``fires(count)`` for a period, if it counts in ``kind`` (batches or epochs)."""
    is_epoch = isinstance(period, Epoch)
    if is_epoch != (kind is Epoch) or period is NEVER:
        return _never
    value = period.value
    if isinstance(value, int) and value >= 1:
        return lambda n: n % value == 0
    return period.should_stop


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
        periods = (validation, checkpoint, report, NEVER, stop_check)
        self._after_batch = tuple(_rule(p, Batch) for p in periods)
        self._at_epoch_end = tuple(_rule(p, Epoch) for p in periods)
        self.target = target

    def reached(self, batches: int) -> bool:
        """Whether training has reached the target (never, without one)."""
        return self.target is not None and batches >= self.target

    def after_batch(self, batches: int) -> Due:
        """What is due once ``batches`` batches are trained in all."""
        val, ckpt, report, _, stop = self._after_batch
        mask = (
            val(batches)
            | ckpt(batches) << 1
            | report(batches) << 2
            | self.reached(batches) << 3
            | stop(batches) << 4
        )
        return _DUE[mask]

    def at_epoch_end(self, epochs: int) -> Due:
        """What is due once ``epochs`` epochs are trained in all."""
        mask = sum(fires(epochs) << i for i, fires in enumerate(self._at_epoch_end))
        return _DUE[mask]
