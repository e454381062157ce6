"""Trials' metric reports: one batch per POST, or a stream of batches over one WebSocket (what
the Core API uses: a message costs a fraction of an HTTP request on both ends). Both go through
the group commit of ``ingest._group_commit`` and answer the same: stored, a duplicate, or an error with its
HTTP status."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, HTTPException, WebSocket, WebSocketDisconnect
from starlette.concurrency import run_in_threadpool

from ..._json import dumps
from ...rest import MetricsStored, routes
from ...store import Delivered, MetricDelivery, Store, StoreError, Trial
from ..engine._engine import Engine
from ..ingest._group_commit import MetricIngest
from ._best_validation import BestSoFar
from ._errors import full_disk_message, store_failure
from ._metric_body import (
    BodyRefused,
    MetricsBody,
    posted_delivery,
    stream_delivery,
)
from ._schemas import TrialId

logger = logging.getLogger(__name__)

#: The largest stream message the master reads (uvicorn's ws_max_size); clients POST larger.
STREAM_MAX_BYTES = 16 * 2**20


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
    full_disk = full_disk_message(store.url, engine.settings.home)

    async def store_delivery(delivery: MetricDelivery) -> MetricsStored:
        trial_id, run_id = delivery.trial_id, delivery.run_id
        validations = [r.values for r in delivery.reports if r.group == "validation"]
        best = (
            await run_in_threadpool(BestSoFar.before_batch, store, trial_id)
            if validations
            else None
        )
        outcome = await ingest.deliver(delivery)
        if outcome is Delivered.STALE:
            # Why (409); or the engine was just recording this run when the batch came: retry.
            await run_in_threadpool(reporting_trial, trial_id, run_id or 0)
            outcome = await ingest.deliver(delivery)
            if outcome is Delivered.STALE:
                raise HTTPException(409, f"run {run_id} of trial {trial_id} ended meanwhile")
        if outcome is Delivered.DUPLICATE:
            return MetricsStored(stored=0, duplicate=True)
        if best is None:
            return MetricsStored(stored=len(delivery.reports))
        await run_in_threadpool(searcher_sees, trial_id, validations)
        return MetricsStored(
            stored=len(delivery.reports), is_best_validation=best.verdicts(validations)
        )

    def searcher_sees(trial_id: int, validations: list[dict[str, Any]]) -> None:
        trial = store.get_trial(trial_id)
        for metrics in validations:
            engine.validation_reported(trial, metrics)

    @app.post(routes.TRIAL_METRICS, dependencies=[auth], response_model_exclude_none=True)
    async def report_metrics(trial_id: TrialId, body: MetricsBody) -> MetricsStored:
        try:
            delivery = posted_delivery(trial_id, body)
        except BodyRefused as e:
            raise HTTPException(422, {"errors": e.lines}) from None
        return await store_delivery(delivery)

    @app.websocket(routes.TRIAL_METRICS_STREAM)
    async def metrics_stream(websocket: WebSocket, trial_id: TrialId) -> None:
        """Each message a MetricsBody with sender and seq; each answered in order with
        ``{"seq", "stored", "duplicate"}`` (and ``is_best_validation`` for a batch with
        validations) or ``{"seq", "status", "detail"}``. (Authenticated
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
            delivery = stream_delivery(trial_id, message)
        except BodyRefused as e:
            return _refusal(e.seq, 422, {"errors": e.lines})
        assert delivery.batch is not None
        seq = delivery.batch.seq
        try:
            stored = await store_delivery(delivery)
        except HTTPException as e:
            return _refusal(seq, e.status_code, e.detail)
        except StoreError as e:
            logger.warning("trial %d's metrics were not stored: %s", trial_id, e)
            return _refusal(seq, *store_failure(e, full_disk))
        reply: dict[str, Any] = {"seq": seq, "stored": stored.stored, "duplicate": stored.duplicate}
        if stored.is_best_validation is not None:
            reply["is_best_validation"] = stored.is_best_validation
        return dumps(reply)


def _refusal(seq: int | None, status: int, detail: Any) -> str:
    return dumps({"seq": seq, "status": status, "detail": detail})
