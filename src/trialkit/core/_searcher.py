"""SearcherContext (0.37 generation): iterate the searcher's operations, each an absolute
training length to reach before validating and reporting the searcher metric."""

from __future__ import annotations

import enum
import functools
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ._backend import TrialBackend
from ._distributed import DistributedContext
from ._metrics import MetricsShipper

if TYPE_CHECKING:
    from ..config import SearcherConfig

logger = logging.getLogger("trialkit.core")


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
        searcher_config: SearcherConfig | Callable[[], SearcherConfig] | None,
        shipper: MetricsShipper | None = None,
    ) -> None:
        """``searcher_config``: the experiment's typed searcher section, or a function giving
        it (read on first use, so a script that never asks for operations never parses the
        config); None off-cluster. ``shipper`` sends progress in the background; without one
        it is sent at once."""
        self._backend = backend
        self._dist = dist
        self._source = searcher_config
        self._shipper = shipper

    @functools.cached_property
    def _config(self) -> SearcherConfig | None:
        source = self._source
        return source() if callable(source) else source

    def _check_available(self) -> None:
        cfg = self._config
        if cfg is not None and not cfg.trains_in_operations:
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
        cfg = self._config
        if cfg is None:
            return Unit.EPOCHS
        unit = cfg.unit or (cfg.max_length.unit if cfg.max_length is not None else None)
        return Unit(unit.upper()) if unit else None
