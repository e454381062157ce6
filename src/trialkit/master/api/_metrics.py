"""Trials' metric reports: one batch per POST, or a stream of batches over one WebSocket (what
the Core API uses: a message costs a fraction of an HTTP request on both ends). Both go through
the group commit of ``ingest._group_commit`` and answer the same: stored, a duplicate, or an
error with its HTTP status."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter, HTTPException, WebSocket, WebSocketDisconnect
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from ..._json import dumps
from ...rest import MAX_METRIC_NAME, MetricsStored, metric_names_error, routes
from ...store import Delivered, MetricBatch, MetricDelivery, NewMetric, StoreError
from ._errors import store_failure
from ._schemas import MAX_INT, MetricsBody, TrialId, encode_storable, encoded_text, error_lines
from ._services import AUTH, Services, Svc
from ._trials import reporting_trial

logger = logging.getLogger(__name__)

#: The largest stream message the master reads (uvicorn's ws_max_size); clients POST larger.
STREAM_MAX_BYTES = 16 * 2**20


def _delivery(trial_id: int, body: MetricsBody) -> MetricDelivery:
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
    if body.sender is not None and body.seq is not None:
        batch = MetricBatch(trial_id, body.run_id, body.sender, body.seq)
    else:
        batch = _content_key(trial_id, body.run_id, reports)
    return MetricDelivery(reports, batch, trial_id=trial_id, run_id=body.run_id)


#: Starts the sender of a content key: a character no client's sender may hold.
_CONTENT_SENDER = "~"


def _content_key(trial_id: int, run_id: int, reports: list[NewMetric]) -> MetricBatch:
    """The key of a batch sent without sender and seq: its content, so that the same batch
    sent again (a retry after a lost reply) is stored once, as a keyed batch is."""
    digest = hashlib.sha256()
    for r in reports:
        text = dumps([r.group, r.steps_completed, r.values_json, r.batch_metrics_json])
        digest.update(text.encode())
    sender = _CONTENT_SENDER + digest.hexdigest()[:31]  # the column holds 32 characters
    return MetricBatch(trial_id, run_id, sender, 0)


_BODY_KEYS = frozenset({"run_id", "reports", "sender", "seq"})
_REPORT_KEYS = frozenset({"group", "steps_completed", "metrics", "batch_metrics"})
_SENDER = re.compile(r"[A-Za-z0-9_-]{1,32}")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: Built once: json.loads with a keyword builds a decoder per call.
_decode = json.JSONDecoder(parse_constant=_no_constants).decode


def _is_count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_INT


def plain_stream_delivery(trial_id: int, message: str) -> MetricDelivery | None:
    """The delivery in a stream message of the shape the Core API sends, checked as
    ``MetricsBody`` checks it; None for anything else (``MetricsBody`` then names what is wrong).

    The master's event loop reads every trial's messages: pydantic, a validated copy of each
    report and a dataclass built from that cost more than the rest of a message's handling."""
    try:
        body = _decode(message)
    except ValueError:
        return None
    if type(body) is not dict or not body.keys() <= _BODY_KEYS:
        return None
    run_id, sender = body.get("run_id", 0), body.get("sender")
    seq: Any = body.get("seq")
    reports = body.get("reports")
    if not (_is_count(run_id) and _is_count(seq) and type(reports) is list):
        return None
    if type(sender) is not str or not _SENDER.fullmatch(sender):
        return None
    new = []
    for r in reports:
        if type(r) is not dict or not r.keys() <= _REPORT_KEYS:
            return None
        group, metrics = r.get("group"), r.get("metrics")
        steps: Any = r.get("steps_completed")
        batch = r.get("batch_metrics")
        if (
            type(group) is not str
            or not 0 < len(group) <= 64
            or "." in group
            or not group.isascii()
        ):
            return None
        if not (_is_count(steps) and type(metrics) is dict):
            return None
        if batch is not None and (
            type(batch) is not list or any(type(b) is not dict for b in batch)
        ):
            return None
        try:
            values_json = encode_storable(metrics)
            batch_json = None if batch is None else encode_storable(batch)
        except ValueError:
            return None
        if _long_names(values_json, (metrics,)) or (
            batch is not None and batch_json is not None and _long_names(batch_json, batch)
        ):
            return None
        new.append(
            NewMetric(trial_id, group, steps, metrics, run_id, batch, 0.0, values_json, batch_json)
        )
    batch_key = MetricBatch(trial_id, run_id, sender, seq)
    return MetricDelivery(new, batch_key, trial_id=trial_id, run_id=run_id)


def _long_names(text: str, dicts: Iterable[dict[str, Any]]) -> bool:
    """Whether a name in ``dicts`` (whose JSON is ``text``) is too long to store. A text no
    longer than the limit holds no such name: the names of most reports are not looked at."""
    return len(text) > MAX_METRIC_NAME and metric_names_error(dicts) is not None


def _check_batch_key(body: MetricsBody) -> None:
    if (body.sender is None) != (body.seq is None):
        raise HTTPException(422, {"errors": ["body.seq: give sender and seq together, or neither"]})


#: No router-wide token dependency: a WebSocket has no Request (TokenAuth checks its handshake).
router = APIRouter()


async def _store_delivery(services: Services, delivery: MetricDelivery) -> MetricsStored:
    """Store a delivery through the group commit; what the trial is told about it (a 409
    when its run may not report)."""
    outcome = await services.ingest.deliver(delivery)
    trial_id, run_id = delivery.trial_id, delivery.run_id
    if outcome is Delivered.STALE:
        # Why (409); or the engine was just recording this run when the batch came: retry.
        await run_in_threadpool(reporting_trial, services, trial_id, run_id or 0)
        outcome = await services.ingest.deliver(delivery)
        if outcome is Delivered.STALE:
            raise HTTPException(409, f"run {run_id} of trial {trial_id} ended meanwhile")
    if outcome is Delivered.DUPLICATE:
        return MetricsStored(stored=0, duplicate=True)
    validations = [r.values for r in delivery.reports if r.group == "validation"]
    if validations:
        await run_in_threadpool(_searcher_sees, services, trial_id, validations)
    return MetricsStored(stored=len(delivery.reports))


def _searcher_sees(services: Services, trial_id: int, validations: list[dict[str, Any]]) -> None:
    trial = services.trial(trial_id)
    for metrics in validations:
        services.engine.validation_reported(trial, metrics)


@router.post(routes.TRIAL_METRICS, dependencies=AUTH)
async def report_metrics(trial_id: TrialId, body: MetricsBody, services: Svc) -> MetricsStored:
    _check_batch_key(body)
    return await _store_delivery(services, _delivery(trial_id, body))


@router.websocket(routes.TRIAL_METRICS_STREAM)
async def metrics_stream(websocket: WebSocket, trial_id: TrialId, services: Svc) -> None:
    """Each message a MetricsBody with sender and seq; each answered in order with
    ``{"seq", "stored", "duplicate"}`` or ``{"seq", "status", "detail"}``. (Authenticated
    by TokenAuth at the handshake, like any request.)"""
    await websocket.accept()
    try:
        while True:
            message = await websocket.receive_text()
            await websocket.send_text(await _stream_reply(services, trial_id, message))
    except WebSocketDisconnect:
        return


async def _stream_reply(services: Services, trial_id: int, message: str) -> str:
    delivery = plain_stream_delivery(trial_id, message)
    if delivery is None:
        try:
            body = MetricsBody.model_validate_json(message)
        except ValidationError as e:
            return _refusal(None, 422, {"errors": error_lines(e.errors(), ("body",))})
        if body.sender is None or body.seq is None:
            return _refusal(body.seq, 422, {"errors": ["body.seq: a stream needs sender and seq"]})
        delivery = _delivery(trial_id, body)
    assert delivery.batch is not None
    seq = delivery.batch.seq
    try:
        stored = await _store_delivery(services, delivery)
    except HTTPException as e:
        return _refusal(seq, e.status_code, e.detail)
    except StoreError as e:
        logger.warning("trial %d's metrics were not stored: %s", trial_id, e)
        return _refusal(seq, *store_failure(e, services.full_disk))
    return dumps({"seq": seq, "stored": stored.stored, "duplicate": stored.duplicate})


def _refusal(seq: int | None, status: int, detail: Any) -> str:
    return dumps({"seq": seq, "status": status, "detail": detail})
