"""The trial side of the master's REST API."""

from __future__ import annotations

import os
from typing import Any

from .._client import MasterClient
from ..errors import APIError
from ._backend import TrialBackend

#: Overrides HttpBackend.RETRY_FOR (seconds): how long a trial keeps retrying an unreachable master.
RETRY_ENV = "TRIALKIT_MASTER_RETRY_SECONDS"


def retry_window(default: float) -> float:
    """``$TRIALKIT_MASTER_RETRY_SECONDS`` when set, else ``default``."""
    raw = os.environ.get(RETRY_ENV, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError(f"{RETRY_ENV}={raw!r}: expected a number of seconds >= 0, e.g. 300")
    return value


class HttpBackend(TrialBackend):
    """The trial side of the master's REST API."""

    #: Connection failures are retried this long before an operation gives up (the default;
    #: ``$TRIALKIT_MASTER_RETRY_SECONDS`` overrides it).
    RETRY_FOR = 300.0

    def __init__(
        self, client: MasterClient, trial_id: int, experiment_id: int, run_id: int
    ) -> None:
        self.client = client
        self.trial_id = trial_id
        self.experiment_id = experiment_id
        self.run_id = run_id
        self._t = f"/api/v1/trials/{trial_id}"
        self.retry_for = retry_window(self.RETRY_FOR)

    def _post(self, path: str, body: Any) -> Any:
        return self.client.request("POST", self._t + path, json_body=body, retry_for=self.retry_for)

    def _get(self, path: str, **params: Any) -> Any:
        return self.client.request("GET", path, params=params or None, retry_for=self.retry_for)

    def ship_metrics(self, reports: list[dict[str, Any]]) -> None:
        # One attempt: the shipper owns retries and backoff for metrics.
        self.client.request(
            "POST", self._t + "/metrics", json_body={"run_id": self.run_id, "reports": reports}
        )

    def ship_metric_batch(self, reports: list[dict[str, Any]], sender: str, seq: int) -> None:
        # The master stores a (run, sender, seq) once: a resend after a lost reply is acknowledged.
        body = {"run_id": self.run_id, "sender": sender, "seq": seq, "reports": reports}
        self.client.request("POST", self._t + "/metrics", json_body=body)

    def report_checkpoint(self, record: dict[str, Any]) -> None:
        self._post("/checkpoints", {**record, "run_id": self.run_id})

    def checkpoint_metadata(self, uuid: str) -> dict[str, Any] | None:
        try:
            return self._get(f"/api/v1/checkpoints/{uuid}")["metadata"]  # type: ignore[no-any-return]
        except APIError as e:
            if e.status in (403, 404):
                return None  # another trial's: the caller reads metadata.json from storage
            raise

    def delete_checkpoint(self, uuid: str) -> None:
        self.client.request("DELETE", f"/api/v1/checkpoints/{uuid}", retry_for=self.retry_for)

    def preemption_requested(self, timeout: float) -> bool:
        resp = self.client.request(
            "GET",
            self._t + "/preemption",
            params={"timeout_seconds": timeout, "run_id": self.run_id},
            timeout=timeout + 10,
        )
        return bool(resp["preempt"])

    def ack_preemption(self) -> None:
        self._post("/ack_preemption", {"run_id": self.run_id})

    def searcher_operation(self) -> tuple[int | None, bool]:
        resp = self._get(self._t + "/searcher/operation")
        return resp["length"], bool(resp["completed"])

    def complete_operation(self, length: int, metric: Any) -> None:
        self._post("/searcher/completed_operation", {"length": length, "metric": metric})

    def report_progress(self, value: float, *, raw: bool) -> None:
        self._post("/progress", {"progress": value, "is_raw": raw})

    def set_status(self, status: str) -> None:
        self._post("/status", {"status": status})

    def report_early_exit(self, reason: str) -> None:
        self._post("/early_exit", {"reason": reason})

    def best_validation(self) -> float | None:
        return self._get(f"/api/v1/experiments/{self.experiment_id}/best_validation")["value"]  # type: ignore[no-any-return]

    def last_validation(self) -> int | None:
        return self._get(self._t + "/last_validation")["steps_completed"]  # type: ignore[no-any-return]

    def close(self, exc: BaseException | None = None) -> None:
        self.client.close()
