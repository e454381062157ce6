"""SearcherContext (0.37 generation): iterate the searcher's operations, each an absolute
training length to reach before validating and reporting the searcher metric."""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterator
from typing import Any

from ._backend import TrialBackend
from ._distributed import DistributedContext
from ._metrics import MetricsShipper

logger = logging.getLogger("trialkit.core")


def _length_value(max_length: Any) -> int:
    """The number in a max_length (int or {unit: N}); 0 when absent."""
    if isinstance(max_length, dict):
        return int(next(iter(max_length.values()), 0) or 0)
    return int(max_length or 0)


class Unit(enum.Enum):
    EPOCHS = "EPOCHS"
    RECORDS = "RECORDS"
    BATCHES = "BATCHES"


class SearcherMode(enum.Enum):
    """How ranks iterate ``operations()``: in step with the chief, or the chief alone."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHEIF_ONLY"  # sic: Determined's spelling of the value


class SearcherOperation:
    """Train until the total reaches ``length``, validate, then ``report_completed(metric)``."""

    def __init__(
        self,
        backend: TrialBackend,
        length: int,
        is_chief: bool,
        shipper: MetricsShipper | None = None,
    ) -> None:
        self._backend = backend
        self._shipper = shipper
        self._length = length
        self._is_chief = is_chief
        self._completed = False

    @property
    def length(self) -> int:
        return self._length

    def report_progress(self, length: float) -> None:
        """Progress in the op's units (chief only)."""
        if not self._is_chief:
            raise RuntimeError("only the chief may report progress")
        if self._completed and length != self._length:
            raise RuntimeError(
                "report_progress() after report_completed() may only report the final length"
            )
        if self._shipper is not None:
            self._shipper.set_progress(float(length), raw=True)
        else:
            self._backend.report_progress(float(length), raw=True)

    def report_completed(self, searcher_metric: Any) -> None:
        """Report the searcher metric for this op (chief only, once)."""
        if not self._is_chief:
            raise RuntimeError("only the chief may call report_completed()")
        if self._completed:
            raise RuntimeError("report_completed() already called for this operation")
        self._completed = True
        if self._shipper is not None:
            self._shipper.flush()  # progress and metrics land before the searcher moves on
        self._backend.complete_operation(self._length, searcher_metric)


class SearcherContext:
    """Operations from the search method for this trial (requires ``searcher.max_length``)."""

    def __init__(
        self,
        backend: TrialBackend,
        dist: DistributedContext,
        searcher_config: dict[str, Any] | None,
        shipper: MetricsShipper | None = None,
    ) -> None:
        """``shipper`` sends progress in the background; without one it is sent at once."""
        self._backend = backend
        self._dist = dist
        self._config = searcher_config
        self._shipper = shipper

    def _check_available(self) -> None:
        if (
            self._config is not None
            and self._config.get("name") != "custom"  # custom searchers always send operations
            and not _length_value(self._config.get("max_length"))
        ):
            raise ValueError(
                "core_context.searcher.operations() needs searcher.max_length in the experiment "
                "config (the 0.37 operations contract); with time_metric/max_time, train for "
                "your own length and report validation metrics instead"
            )

    def operations(
        self, searcher_mode: SearcherMode = SearcherMode.WorkersAskChief, auto_ack: bool = True
    ) -> Iterator[SearcherOperation]:
        """Yield operations until the searcher has none left for this trial."""
        self._check_available()
        is_chief = self._dist.rank == 0
        if searcher_mode == SearcherMode.ChiefOnly and not is_chief:
            raise RuntimeError("operations() in ChiefOnly mode may only be called by the chief")
        while True:
            length = self._next_length(searcher_mode, is_chief)
            if length is None:
                if auto_ack and is_chief:
                    self.acknowledge_out_of_ops()
                return
            op = SearcherOperation(self._backend, length, is_chief, self._shipper)
            yield op
            if is_chief and not op._completed:
                raise RuntimeError("you must call op.report_completed() on each operation")

    def _next_length(self, mode: SearcherMode, is_chief: bool) -> int | None:
        length: int | None = None
        if is_chief:
            op_length, completed = self._backend.searcher_operation()
            length = None if completed else op_length
        if mode == SearcherMode.WorkersAskChief:
            length = self._dist.broadcast(length)
        return length

    def acknowledge_out_of_ops(self) -> None:
        """Tell the master the trial exits because it has no operation now (it may be resumed)."""
        self._backend.ack_preemption()

    def get_configured_units(self) -> Unit | None:
        """The unit of ``searcher.max_length`` (``searcher.unit`` for custom searchers)."""
        if self._config is None:
            return Unit.EPOCHS
        unit = self._config.get("unit")
        if unit:
            return Unit(str(unit).upper())
        max_length = self._config.get("max_length")
        if isinstance(max_length, dict) and len(max_length) == 1:
            return Unit(next(iter(max_length)).upper())
        return None
