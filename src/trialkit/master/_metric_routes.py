"""Trials' metric reports: one batch per POST, or a stream of batches over one WebSocket (what
the Core API uses: a message costs a fraction of an HTTP request on both ends). Both go through
the group commit of ``_ingest`` and answer the same: stored, a duplicate, or an error with its
HTTP status."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, HTTPException, WebSocket, WebSocketDisconnect
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from .._json import dumps
from ..rest import MetricsStored, routes
from ..store import Delivered, MetricBatch, MetricDelivery, NewMetric, Store, StoreError, Trial
from ._engine import Engine
from ._ingest import MetricIngest
from ._schemas import MetricsBody, TrialId, encoded_text, error_lines

logger = logging.getLogger(__name__)

#: The largest stream message the master reads (uvicorn's ws_max_size); clients POST larger.
STREAM_MAX_BYTES = 16 * 2**20


def _delivery(trial_id: int, body: MetricsBody) -> MetricDelivery:
    batch = None
    if body.sender is not None and body.seq is not None:
        batch = MetricBatch(trial_id, body.run_id, body.sender, body.seq)
    reports = [
        NewMetric(
            trial_id=trial_id,
            run_id=body.run_id,
            group=r.group,
            steps_completed=r.steps_completed,
            values=r.metrics,
            batch_metrics=r.batch_metrics,
            values_json=encoded_text(r.metrics),
            batch_metrics_json=encoded_text(r.batch_metrics),
        )
        for r in body.reports
    ]
    return MetricDelivery(reports, batch, trial_id=trial_id, run_id=body.run_id)


def _check_batch_key(body: MetricsBody) -> None:
    if (body.sender is None) != (body.seq is None):
        raise HTTPException(422, {"errors": ["body.seq: give sender and seq together, or neither"]})


def add_metric_routes(
    app: FastAPI,
    store: Store,
    engine: Engine,
    auth: Any,
    reporting_trial: Callable[[int, int], Trial],
) -> None:
    """Register the metrics POST and stream routes; ``reporting_trial`` raises the 409 that
    says why a run may not report (or returns the trial when it now may)."""
    ingest = MetricIngest(store)

    async def store_batch(trial_id: int, body: MetricsBody) -> MetricsStored:
        delivery = _delivery(trial_id, body)
        outcome = await ingest.deliver(delivery)
        if outcome is Delivered.STALE:
            # Why (409); or the engine was just recording this run when the batch came: retry.
            await run_in_threadpool(reporting_trial, trial_id, body.run_id)
            outcome = await ingest.deliver(delivery)
            if outcome is Delivered.STALE:
                raise HTTPException(409, f"run {body.run_id} of trial {trial_id} ended meanwhile")
        if outcome is Delivered.DUPLICATE:
            return MetricsStored(stored=0, duplicate=True)
        validations = [r.metrics for r in body.reports if r.group == "validation"]
        if validations:
            await run_in_threadpool(searcher_sees, trial_id, validations)
        return MetricsStored(stored=len(body.reports))

    def searcher_sees(trial_id: int, validations: list[dict[str, Any]]) -> None:
        trial = store.get_trial(trial_id)
        for metrics in validations:
            engine.validation_reported(trial, metrics)

    @app.post(routes.TRIAL_METRICS, dependencies=[auth])
    async def report_metrics(trial_id: TrialId, body: MetricsBody) -> MetricsStored:
        _check_batch_key(body)
        return await store_batch(trial_id, body)

    @app.websocket(routes.TRIAL_METRICS_STREAM)
    async def metrics_stream(websocket: WebSocket, trial_id: TrialId) -> None:
        """Each message a MetricsBody with sender and seq; each answered in order with
        ``{"seq", "stored", "duplicate"}`` or ``{"seq", "status", "detail"}``. (Authenticated
        by TokenAuth at the handshake, like any request.)"""
        await websocket.accept()
        try:
            while True:
                message = await websocket.receive_text()
                await websocket.send_text(await stream_reply(trial_id, message))
        except WebSocketDisconnect:
            return

    async def stream_reply(trial_id: int, message: str) -> str:
        try:
            body = MetricsBody.model_validate_json(message)
        except ValidationError as e:
            return _refusal(None, 422, {"errors": error_lines(e.errors(), ("body",))})
        if body.sender is None or body.seq is None:
            return _refusal(body.seq, 422, {"errors": ["body.seq: a stream needs sender and seq"]})
        try:
            stored = await store_batch(trial_id, body)
        except HTTPException as e:
            return _refusal(body.seq, e.status_code, e.detail)
        except StoreError as e:
            logger.warning("trial %d's metrics were not stored: %s", trial_id, e)
            return _refusal(body.seq, 503, f"the store failed; send again: {e}")
        return dumps({"seq": body.seq, "stored": stored.stored, "duplicate": stored.duplicate})


def _refusal(seq: int | None, status: int, detail: Any) -> str:
    return dumps({"seq": seq, "status": status, "detail": detail})
