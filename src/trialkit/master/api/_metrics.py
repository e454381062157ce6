"""Trials' metric reports: one batch per POST, or a stream of batches over one WebSocket (what
the Core API uses: a message costs a fraction of an HTTP request on both ends). Both go through
the group commit of ``ingest._group_commit`` and answer the same: stored, a duplicate, or an error with its
HTTP status."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, HTTPException, WebSocket, WebSocketDisconnect
from starlette.concurrency import run_in_threadpool

from ..._json import dumps
from ...rest import MetricsStored, routes
from ...store import Delivered, MetricDelivery, StoreError
from ._best_validation import BestSoFar
from ._errors import store_failure
from ._metric_body import (
    BodyRefused,
    MetricsBody,
    posted_delivery,
    stream_delivery,
)
from ._schemas import TrialId
from ._services import AUTH, Services, Svc
from ._trials import reporting_trial

logger = logging.getLogger(__name__)

#: The largest stream message the master reads (uvicorn's ws_max_size); clients POST larger.
STREAM_MAX_BYTES = 16 * 2**20


#: No router-wide token dependency: a WebSocket has no Request (TokenAuth checks its handshake).
router = APIRouter()


async def _store_delivery(services: Services, delivery: MetricDelivery) -> MetricsStored:
    """Store a delivery through the group commit; what the trial is told about it (a 409 when
    its run may not report), with the best-validation verdicts of a batch carrying validations."""
    trial_id, run_id = delivery.trial_id, delivery.run_id
    validations = [r.values for r in delivery.reports if r.group == "validation"]
    best = (
        await run_in_threadpool(BestSoFar.before_batch, services.store, trial_id)
        if validations
        else None
    )
    outcome = await services.ingest.deliver(delivery)
    if outcome is Delivered.STALE:
        # Why (409); or the engine was just recording this run when the batch came: retry.
        await run_in_threadpool(reporting_trial, services, trial_id, run_id or 0)
        outcome = await services.ingest.deliver(delivery)
        if outcome is Delivered.STALE:
            raise HTTPException(409, f"run {run_id} of trial {trial_id} ended meanwhile")
    if outcome is Delivered.DUPLICATE:
        return MetricsStored(stored=0, duplicate=True)
    if best is None:
        return MetricsStored(stored=len(delivery.reports))
    await run_in_threadpool(_searcher_sees, services, trial_id, validations)
    return MetricsStored(
        stored=len(delivery.reports), is_best_validation=best.verdicts(validations)
    )


def _searcher_sees(services: Services, trial_id: int, validations: list[dict[str, Any]]) -> None:
    trial = services.trial(trial_id)
    for metrics in validations:
        services.engine.validation_reported(trial, metrics)


@router.post(routes.TRIAL_METRICS, dependencies=AUTH, response_model_exclude_none=True)
async def report_metrics(trial_id: TrialId, body: MetricsBody, services: Svc) -> MetricsStored:
    try:
        delivery = posted_delivery(trial_id, body)
    except BodyRefused as e:
        raise HTTPException(422, {"errors": e.lines}) from None
    return await _store_delivery(services, delivery)


@router.websocket(routes.TRIAL_METRICS_STREAM)
async def metrics_stream(websocket: WebSocket, trial_id: TrialId, services: Svc) -> None:
    """Each message a MetricsBody with sender and seq; each answered in order with
    ``{"seq", "stored", "duplicate"}`` (and ``is_best_validation`` for a batch with
    validations) or ``{"seq", "status", "detail"}``. (Authenticated by TokenAuth at the
    handshake, like any request.)"""
    await websocket.accept()
    try:
        while True:
            message = await websocket.receive_text()
            await websocket.send_text(await _stream_reply(services, trial_id, message))
    except WebSocketDisconnect:
        return


async def _stream_reply(services: Services, trial_id: int, message: str) -> str:
    try:
        delivery = stream_delivery(trial_id, message)
    except BodyRefused as e:
        return _refusal(e.seq, 422, {"errors": e.lines})
    assert delivery.batch is not None
    seq = delivery.batch.seq
    try:
        stored = await _store_delivery(services, delivery)
    except HTTPException as e:
        return _refusal(seq, e.status_code, e.detail)
    except StoreError as e:
        logger.warning("trial %d's metrics were not stored: %s", trial_id, e)
        return _refusal(seq, *store_failure(e, services.full_disk))
    reply: dict[str, Any] = {"seq": seq, "stored": stored.stored, "duplicate": stored.duplicate}
    if stored.is_best_validation is not None:
        reply["is_best_validation"] = stored.is_best_validation
    return dumps(reply)


def _refusal(seq: int | None, status: int, detail: Any) -> str:
    return dumps({"seq": seq, "status": status, "detail": detail})
