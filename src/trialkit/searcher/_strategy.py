"""The contract between the bookkeeping searcher and each search algorithm ("strategy").

A strategy holds only its algorithm's state; the searcher (``_searcher.py``) owns the RNG, trial
bookkeeping, progress reports and the Shutdown rule, as Determined's ``Searcher`` wraps its methods.
State is mutated in place (no snapshot copies): every event is O(log n) or amortized O(1).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from typing import Any, Protocol

from trialkit.searcher._ops import Create, ExitedReason, Operation

INVALID_REASONS = (ExitedReason.INVALID_HP, ExitedReason.INIT_INVALID_HP)


def is_invalid(reason: ExitedReason) -> bool:
    """An InvalidHP exit (at init or during training)."""
    return reason in INVALID_REASONS


class TrialSource(Protocol):
    """Makes Create operations from the searcher's RNG."""

    def create(self, hparams: dict[str, Any] | None = None) -> Create:
        """A Create with a fresh sample (or the given point), request id and seed."""
        ...


class ProgressBook:
    """Reported per-trial progress, kept as running sums so reading it is O(1)."""

    def __init__(self) -> None:
        self._open: dict[str, float] = {}
        self._open_sum = 0.0
        self._closed = 0

    def add(self, request_id: str) -> None:
        """A created trial starts at 0."""
        self._open.setdefault(request_id, 0.0)

    def update(self, request_id: str, value: float) -> None:
        """Record a running trial's progress; NaN/Inf count as 0."""
        if request_id in self._open:
            value = value if math.isfinite(value) else 0.0
            self._open_sum += value - self._open[request_id]
            self._open[request_id] = value

    def close(self, request_id: str) -> None:
        """The trial exited: it now counts as a whole trial."""
        if request_id in self._open:
            self._open_sum -= self._open.pop(request_id)
            self._closed += 1

    def drop(self, request_id: str) -> None:
        """Forget an InvalidHP trial that will be replaced."""
        if request_id in self._open:
            self._open_sum -= self._open.pop(request_id)

    def fraction(self, total_trials: int, unit: float) -> float:
        """(closed × unit + running units) ÷ (unit × total_trials)."""
        if total_trials <= 0:
            return 1.0
        if unit <= 0:
            return self._closed / total_trials
        return (self._closed * unit + self._open_sum) / (unit * total_trials)

    def mean(self) -> float:
        """0.38: the mean over the book's trials (closed = 1, running = reported fraction)."""
        count = len(self._open) + self._closed
        return (self._closed + self._open_sum) / count if count else 0.0

    def state(self) -> dict[str, Any]:
        """JSON-serializable state."""
        return {"open": dict(self._open), "open_sum": self._open_sum, "closed": self._closed}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Inverse of ``state()``."""
        self._open = {str(k): float(v) for k, v in state["open"].items()}
        self._open_sum = float(state["open_sum"])
        self._closed = int(state["closed"])


class Strategy(abc.ABC):
    """One search algorithm; the searcher feeds it events and records the operations it returns."""

    #: whether an InvalidHP trial leaves the progress book (it gets replaced)
    drops_invalid_progress = False

    @abc.abstractmethod
    def initial(self, trials: TrialSource) -> list[Operation]:
        """Operations at experiment start."""

    def created(self, request_id: str) -> list[Operation]:
        """The master created the trial."""
        return []

    @abc.abstractmethod
    def validation(
        self, trials: TrialSource, request_id: str, metrics: Mapping[str, Any]
    ) -> list[Operation]:
        """A validation result (0.37: an op completed; 0.38: any report)."""

    @abc.abstractmethod
    def exited_early(
        self, trials: TrialSource, request_id: str, reason: ExitedReason
    ) -> list[Operation]:
        """The trial ended before the strategy was done with it."""

    @abc.abstractmethod
    def closed(self, trials: TrialSource, request_id: str) -> list[Operation]:
        """The trial exited for good."""

    @abc.abstractmethod
    def progress(self, book: ProgressBook) -> float:
        """Search progress (not yet clamped)."""

    def report_schedule(self, request_id: str) -> list[int]:
        """0.38 only: the time-metric values at which this trial's reports matter (for previews)."""
        return []

    @abc.abstractmethod
    def state(self) -> dict[str, Any]:
        """JSON-serializable state."""

    @abc.abstractmethod
    def restore(self, state: Mapping[str, Any]) -> None:
        """Inverse of ``state()`` on a strategy built from the same config."""
