"""The trial side of the master's REST API."""

from __future__ import annotations

import logging
from typing import Any

from .. import rest
from ..client import MasterClient
from ..contract import REPORT_RETRY_SECONDS, retry_window
from ..errors import APIError, MasterUnavailable
from ._backend import Outcome, TrialBackend
from ._stream import BatchTooLarge, MetricStream, StreamUnsupported

logger = logging.getLogger("trialkit.core")


class HttpBackend(TrialBackend):
    """The trial side of the master's REST API."""

    #: Connection failures are retried this long before an operation gives up (the default;
    #: ``$TRIALKIT_MASTER_RETRY_SECONDS`` overrides it).
    RETRY_FOR = REPORT_RETRY_SECONDS
    #: Seconds between metric batches over the master's stream (a POST costs both ends far
    #: more CPU, so without the stream batches go at the default, slower pace: bench/README.md,
    #: stream-vs-post).
    STREAM_INTERVAL = 0.05

    def __init__(
        self, client: MasterClient, trial_id: int, experiment_id: int, run_id: int
    ) -> None:
        self.client = client
        self.trial_id = trial_id
        self.experiment_id = experiment_id
        self.run_id = run_id
        self.retry_for = retry_window(self.RETRY_FOR)
        self._stream: MetricStream | None = MetricStream(client, trial_id)

    def ship_metrics(self, reports: list[dict[str, Any]]) -> None:
        # One attempt: the shipper owns retries and backoff for metrics.
        self.client.report_metrics(self.trial_id, self.run_id, reports)

    @property
    def metrics_interval(self) -> float:
        return self.STREAM_INTERVAL if self._stream is not None else super().metrics_interval

    def prepare_metrics(self) -> None:
        """Open the stream before the first report: its handshake then costs the first batch
        nothing, and trials started together do not meet the master with every handshake and
        first batch in the same tenth of a second (bench/README.md: stream-handshake)."""
        if self._stream is None:
            return
        try:
            self._stream.open()
        except StreamUnsupported as e:
            self._post_from_now(e)
        except MasterUnavailable:
            pass  # the first batch retries, and says so if the master stays away

    def send_metric_batch(
        self, reports: list[dict[str, Any]], sender: str, seq: int
    ) -> rest.MetricsStored | None:
        """Over the stream (in flight: None), else one POST (its reply). The master stores a
        (run, sender, seq) once: a resend after a lost reply is acknowledged."""
        if self._stream is not None:
            body = {"run_id": self.run_id, "reports": reports, "sender": sender, "seq": seq}
            try:
                self._stream.send_nowait(body)
                return None
            except BatchTooLarge:
                pass  # this batch goes by POST
            except StreamUnsupported as e:
                self._post_from_now(e)
        return self.client.report_metrics(
            self.trial_id, self.run_id, reports, sender=sender, seq=seq
        )

    def _post_from_now(self, why: StreamUnsupported) -> None:
        """The master offers no stream (an older one, a proxy): every batch goes by POST."""
        logger.info("%s; metrics go by POST", why)
        self._stream = None

    def metric_outcomes(self, wait: bool) -> list[tuple[int, Outcome]]:
        return self._stream.outcomes(wait) if self._stream is not None else []

    def report_checkpoint(self, record: dict[str, Any]) -> None:
        self.client.report_checkpoint(self.trial_id, self.run_id, record, retry_for=self.retry_for)

    def checkpoint_metadata(self, uuid: str) -> dict[str, Any] | None:
        try:
            return self.client.get_checkpoint(uuid, retry_for=self.retry_for).metadata
        except APIError as e:
            if e.status in (403, 404):
                return None  # another trial's: the caller reads metadata.json from storage
            raise

    def delete_checkpoint(self, uuid: str) -> None:
        self.client.delete_checkpoint(uuid, retry_for=self.retry_for)

    def preemption_requested(self, timeout: float) -> bool:
        return self.client.preemption(self.trial_id, self.run_id, timeout_seconds=timeout).preempt

    def ack_preemption(self) -> None:
        self.client.ack_preemption(self.trial_id, self.run_id, retry_for=self.retry_for)

    def searcher_operation(self) -> tuple[int | None, bool]:
        op = self.client.searcher_operation(self.trial_id, retry_for=self.retry_for)
        return op.length, op.completed

    def complete_operation(self, length: int, metric: Any) -> None:
        self.client.complete_operation(self.trial_id, length, metric, retry_for=self.retry_for)

    def report_progress(self, value: float, *, raw: bool) -> None:
        self.client.report_progress(self.trial_id, value, is_raw=raw, retry_for=self.retry_for)

    def set_status(self, status: str) -> None:
        self.client.set_status(self.trial_id, status, retry_for=self.retry_for)

    def report_early_exit(self, reason: str) -> None:
        self.client.report_early_exit(self.trial_id, reason, retry_for=self.retry_for)

    def best_validation(self) -> float | None:
        return self.client.best_validation(self.experiment_id, retry_for=self.retry_for).value

    def last_validation(self) -> int | None:
        return self.client.last_validation(self.trial_id, retry_for=self.retry_for).steps_completed

    def close(self, exc: BaseException | None = None) -> None:
        if self._stream is not None:
            self._stream.close()
        self.client.close()
