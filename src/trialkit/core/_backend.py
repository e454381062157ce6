"""How a trial's contexts reach the master: one interface, two twins chosen once in ``init()``.

``HttpBackend`` (in ``_http``) talks to a running master; ``LocalBackend`` (in ``_local``) appends
to the run's journal for the master to ingest, so a plain ``python train.py`` is tracked too.
Each is imported only when chosen, so ``import trialkit`` pays for neither httpx nor SQLAlchemy.
"""

from __future__ import annotations

import abc
from typing import Any, Protocol

from ..rest import MetricsStored
from ..storage import tensorboard_prefix

#: What became of a batch sent to the master: its reply when stored, the error when not.
Outcome = MetricsStored | Exception


class MetricSink(Protocol):
    """Where the metrics shipper sends its batches: the one way a batch reaches the master.

    ``HttpBackend`` streams them over the master's WebSocket, answers read later (the POST is
    its fallback: a master or proxy without the stream, a batch too large for a message);
    a backend that stores each batch as it is sent answers at once."""

    @property
    def metrics_interval(self) -> float:
        """Seconds the metrics shipper lets reports gather into one batch."""
        ...

    def prepare_metrics(self) -> None:
        """Set up the way batches will go (the stream's connection), on the shipping thread as
        it starts; a failure here is left for the first send to meet and report."""

    def send_metric_batch(
        self, reports: list[dict[str, Any]], sender: str, seq: int
    ) -> MetricsStored | None:
        """Send batch ``seq`` of the shipper ``sender`` (the pair lets the master store a resend
        once): the master's reply when stored before this returned, None when now in flight
        (``metric_outcomes`` tells later what became of it)."""
        ...

    def metric_outcomes(self, wait: bool) -> list[tuple[int, Outcome]]:
        """What became of batches in flight, oldest first. With ``wait``, block until at least
        one is known. Raises when the connection broke: every batch still in flight must then
        be sent again."""
        ...


class TrialBackend(abc.ABC):
    """Everything a trial asks of the master (a ``MetricSink`` for its metrics)."""

    trial_id: int
    experiment_id: int
    run_id: int

    def tensorboard_prefix(self) -> str:
        """Where this trial's TensorBoard files go in checkpoint storage."""
        return tensorboard_prefix(self.experiment_id, self.trial_id)

    @property
    def metrics_interval(self) -> float:
        """Seconds the metrics shipper lets reports gather into one batch."""
        return 0.25

    @abc.abstractmethod
    def ship_metrics(self, reports: list[dict[str, Any]]) -> None:
        """Store a batch of reports {group, steps_completed, metrics, batch_metrics} now."""

    def send_metric_batch(
        self, reports: list[dict[str, Any]], sender: str, seq: int
    ) -> MetricsStored | None:
        """``MetricSink.send_metric_batch`` of a backend that stores each batch as it is sent."""
        self.ship_metrics(reports)
        return MetricsStored(stored=len(reports))

    def prepare_metrics(self) -> None:
        """``MetricSink.prepare_metrics``: nothing to set up for a backend that stores each
        batch when sent."""
        return None

    def metric_outcomes(self, wait: bool) -> list[tuple[int, Outcome]]:
        """``MetricSink.metric_outcomes``: none is ever in flight here."""
        return []

    @abc.abstractmethod
    def report_checkpoint(self, record: dict[str, Any]) -> None:
        """Register a complete checkpoint {uuid, steps_completed, metadata, resources, storage}."""

    @abc.abstractmethod
    def checkpoint_metadata(self, uuid: str) -> dict[str, Any] | None:
        """The metadata of a registered checkpoint (None if unknown)."""

    @abc.abstractmethod
    def delete_checkpoint(self, uuid: str) -> None:
        """Mark a checkpoint deleted."""

    @abc.abstractmethod
    def preemption_requested(self, timeout: float) -> bool:
        """Whether the trial should stop; may wait up to ``timeout`` s for a change."""

    @abc.abstractmethod
    def ack_preemption(self) -> None:
        """Tell the master the trial is exiting on request and expects to be resumed."""

    @abc.abstractmethod
    def searcher_operation(self) -> tuple[int | None, bool]:
        """(length of the current op, completed) for the 0.37 operations API."""

    @abc.abstractmethod
    def complete_operation(self, length: int, metric: Any) -> None:
        """Report the searcher metric for the op of ``length``."""

    @abc.abstractmethod
    def report_progress(self, value: float, *, raw: bool) -> None:
        """Progress: a fraction in [0, 1] (raw=False) or op units (raw=True)."""

    @abc.abstractmethod
    def set_status(self, status: str) -> None:
        """A short line saying what the trial is doing."""

    @abc.abstractmethod
    def report_early_exit(self, reason: str) -> None:
        """The trial is exiting early for ``reason`` (e.g. INVALID_HP)."""

    @abc.abstractmethod
    def best_validation(self) -> float | None:
        """Best searcher metric over the experiment's validation reports."""

    @abc.abstractmethod
    def last_validation(self) -> int | None:
        """steps_completed of the trial's latest validation report."""

    def close(self, exc: BaseException | None = None) -> None:  # noqa: B027
        """Release resources; ``exc`` is the error the trial's block ended with, if any."""
