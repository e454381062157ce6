"""What to train to under the master: the searcher's lengths (0.37 operations or 0.38
``time_metric`` + ``max_time``) as loop targets, with progress reported in the searcher's unit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .. import core
from ._loop import Target
from ._progress import Progress
from ._units import Batch, Epoch, TrainUnit

if TYPE_CHECKING:
    from ..config import SearcherConfig


class SearcherUnits:
    """Converts searcher lengths (batches / records / epochs) to loop lengths and back.

    As Determined's Trial harnesses: records divide by the global batch size, and an epoch is
    one pass over the training data (``records_per_epoch`` plays no part, reference §7.6.7)."""

    def __init__(self, unit: str, gbs: int | None) -> None:
        self.unit = unit
        self.gbs = gbs
        if unit == "records" and not gbs:
            raise ValueError("a searcher length in records needs hyperparameters.global_batch_size")
        if unit not in ("batches", "records", "epochs"):
            raise ValueError(
                f"searcher unit {unit!r}: a Trial harness trains in batches, records or epochs"
            )

    def length(self, n: int) -> TrainUnit:
        if self.unit == "batches":
            return Batch(n)
        if self.unit == "records":
            assert self.gbs
            return Batch._from_records(n, self.gbs)
        return Epoch(n)

    def done(self, p: Progress, epoch_len: float) -> float:
        if self.unit == "batches":
            return float(p.batches_trained)
        if self.unit == "records":
            return float(p.records_trained)
        return p.batches_trained / epoch_len


def searcher_targets(
    core_context: core.Context,
    searcher: SearcherConfig,
    gbs: int | None,
    epoch_len: Callable[[], float],
) -> Iterator[Target] | list[Target]:
    """Targets from the experiment's ``searcher`` section; ``epoch_len()`` is read when
    progress is reported (the loop knows it once the training data is built)."""
    if searcher.trains_in_operations:
        units = SearcherUnits(_operations_unit(searcher), gbs)
        return _operation_targets(core_context, units, epoch_len)
    if searcher.time_metric and searcher.max_time:
        units = SearcherUnits(searcher.time_metric, gbs)
        total = searcher.max_time

        def report(p: Progress, _: int) -> None:
            core_context.train.report_progress(min(units.done(p, epoch_len()) / total, 1.0))

        return [Target(units.length(total), report_progress=report)]
    raise ValueError(_NO_LENGTH)


_NO_LENGTH = (
    "fit(max_length=...) must be set: the experiment config has neither searcher.max_length "
    "nor searcher.time_metric + max_time"
)


def _operations_unit(searcher: SearcherConfig) -> str:
    """The unit of the operations' lengths: max_length's, else a custom searcher's ``unit``."""
    length = searcher.max_length
    if length is not None and length.value:
        if length.unit is None:
            raise ValueError(
                f"searcher.max_length: {length.value} has no unit; write "
                f"{{batches: {length.value}}} (or records / epochs) for a Trial class entrypoint"
            )
        return length.unit
    if searcher.unit is None:  # 0.26-0.37 custom searchers: each operation's length in ``unit``
        raise ValueError(_NO_LENGTH)
    return searcher.unit


def _operation_targets(
    core_context: core.Context, units: SearcherUnits, epoch_len: Callable[[], float]
) -> Iterator[Target]:
    chief = core_context.distributed.rank == 0
    for op in core_context.searcher.operations():

        def reached(metric: Any, op: Any = op) -> None:
            if chief:
                op.report_completed(metric)

        def progress(p: Progress, _: int, op: Any = op) -> None:
            op.report_progress(min(units.done(p, epoch_len()), op.length))

        yield Target(units.length(op.length), reached=reached, report_progress=progress)
