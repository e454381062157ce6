"""The searcher's lengths for a Lightning run: 0.37 operations or 0.38 ``time_metric`` +
``max_time``, as targets in training batches."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .. import core

if TYPE_CHECKING:
    from ..config import SearcherConfig


class Target:
    """Train to ``length`` (in the searcher's unit), validate, then report (operations only)."""

    def __init__(self, length: int, op: core.SearcherOperation | None) -> None:
        self.length = length
        self.op = op


class SearcherTargets:
    """The targets of a trial; ``None`` from ``next()`` means the searcher has no more."""

    def __init__(self, core_context: core.Context, searcher: SearcherConfig, gbs: int | None):
        self._core = core_context
        self._gbs = gbs
        self._ops: Iterator[core.SearcherOperation] | None = None
        self._single: int | None = None
        length = searcher.max_length
        if (length is not None and length.value) or searcher.name == "custom":  # operations
            units = core_context.searcher.get_configured_units()
            self.unit = (units or core.Unit.BATCHES).value.lower()
            self._ops = core_context.searcher.operations()
        elif searcher.time_metric and searcher.max_time:
            self.unit = searcher.time_metric
            self._single = searcher.max_time
        else:
            raise ValueError(
                "searcher: neither max_length nor time_metric + max_time is set; the "
                "TrialkitCallback cannot tell how long to train"
            )
        if self.unit not in ("batches", "epochs", "records"):
            raise ValueError(
                f"searcher time_metric {self.unit!r}: the TrialkitCallback trains in batches, "
                "records or epochs"
            )
        if self.unit == "records" and not gbs:
            raise ValueError("a searcher length in records needs hyperparameters.global_batch_size")

    def next(self) -> Target | None:
        if self._ops is not None:
            op = next(self._ops, None)
            return None if op is None else Target(op.length, op)
        if self._single is None:
            return None
        length, self._single = self._single, None
        return Target(length, None)

    def batches(self, length: float, epoch_len: float) -> int:
        """A length in the searcher's unit as a number of training batches."""
        if self.unit == "batches":
            return int(length)
        if self.unit == "records":
            assert self._gbs
            return math.ceil(length / self._gbs)
        if math.isinf(epoch_len):
            raise ValueError(
                "searcher length in epochs: the training DataLoader has no length; use batches"
            )
        return int(length * epoch_len)

    def done(self, batches: int, epoch_len: float) -> float:
        """Training so far in the searcher's unit."""
        if self.unit == "batches":
            return float(batches)
        if self.unit == "records":
            assert self._gbs
            return float(batches * self._gbs)
        return batches / epoch_len
