"""The one owner of what a metric batch may hold: the pydantic ``MetricsBody`` (the POST, and
any stream message of another shape) and, beside it, the hand-written reader of the stream
messages the Core API sends, which must accept exactly what ``MetricsBody`` accepts and build
the same delivery (tests/unit/master/api/test_metric_body.py holds them to it)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, ValidationError

from ..._json import dumps
from ...rest import MAX_METRIC_NAME, metric_name_error, metric_names_error
from ...store import MetricBatch, MetricDelivery, NewMetric
from ._schemas import (
    MAX_INT,
    Count,
    EncodedList,
    EncodedObject,
    encode_storable,
    encoded_text,
    error_lines,
)


def _encoded_metrics(value: dict[str, Any]) -> EncodedObject:
    """Metrics whose names can be stored, with their JSON text."""
    error = metric_name_error(value)
    if error is not None:
        raise ValueError(error)
    return EncodedObject(value, encode_storable(value))


def _encoded_batch_metrics(value: list[dict[str, Any]]) -> EncodedList:
    """Per-batch metrics whose names can be stored, with their JSON text."""
    error = metric_names_error(value)
    if error is not None:
        raise ValueError(error)
    return EncodedList(value, encode_storable(value))


class MetricReport(BaseModel):
    """One report. ``metrics`` and ``batch_metrics`` are only stored (validation reports are
    also read by the searcher), so they are encoded once here and the store keeps that text."""

    group: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^.]+$")]
    steps_completed: Count
    metrics: Annotated[dict[str, Any], AfterValidator(_encoded_metrics)]
    batch_metrics: (
        Annotated[list[dict[str, Any]], AfterValidator(_encoded_batch_metrics)] | None
    ) = None


class MetricsBody(BaseModel):
    run_id: Count = 0
    reports: list[MetricReport]
    #: The shipper's random id and the batch's number in it: a resend is stored once.
    sender: (
        Annotated[str, Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9_-]+$")] | None
    ) = None
    seq: Count | None = None


class BodyRefused(Exception):
    """A batch that cannot be stored as sent: its 422 lines, and the seq it had (if readable)."""

    def __init__(self, lines: list[str], seq: int | None = None) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines
        self.seq = seq


def delivery(trial_id: int, body: MetricsBody) -> MetricDelivery:
    """What the store keeps of a validated ``body``: its reports under its batch key."""
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


def posted_delivery(trial_id: int, body: MetricsBody) -> MetricDelivery:
    """The delivery of a POSTed body; BodyRefused when it has only one of sender and seq."""
    if (body.sender is None) != (body.seq is None):
        raise BodyRefused(["body.seq: give sender and seq together, or neither"], body.seq)
    return delivery(trial_id, body)


def stream_delivery(trial_id: int, message: str) -> MetricDelivery:
    """The delivery in a stream message: the fast reader's for the Core API's messages,
    ``MetricsBody``'s for any other; BodyRefused with the lines a POST's 422 would carry."""
    fast = plain_stream_delivery(trial_id, message)
    if fast is not None:
        return fast
    try:
        body = _read_as_posted(message)
    except ValidationError as e:
        raise BodyRefused(error_lines(e.errors(), ("body",))) from None
    if body.sender is None or body.seq is None:
        raise BodyRefused(["body.seq: a stream needs sender and seq"], body.seq)
    return delivery(trial_id, body)


def _read_as_posted(message: str) -> MetricsBody:
    """``message`` validated as FastAPI validates a POSTed body (JSON decoded first), so a
    refusal names the same errors in the same words (pydantic's JSON mode words some apart)."""
    try:
        data = json.loads(message)
    except ValueError:
        return MetricsBody.model_validate_json(message)  # raises, naming where the JSON breaks
    return MetricsBody.model_validate(data)


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


# The fast reader --------------------------------------------------------------------------------

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
        report = _plain_report(trial_id, run_id, r)
        if report is None:
            return None
        new.append(report)
    batch_key = MetricBatch(trial_id, run_id, sender, seq)
    return MetricDelivery(new, batch_key, trial_id=trial_id, run_id=run_id)


def _plain_report(trial_id: int, run_id: int, r: Any) -> NewMetric | None:
    """One report of a plain stream message as ``MetricReport`` would take it, else None."""
    if type(r) is not dict or not r.keys() <= _REPORT_KEYS:
        return None
    group, metrics = r.get("group"), r.get("metrics")
    steps: Any = r.get("steps_completed")
    batch = r.get("batch_metrics")
    if type(group) is not str or not 0 < len(group) <= 64 or "." in group or not group.isascii():
        return None
    if not (_is_count(steps) and type(metrics) is dict):
        return None
    if batch is not None and (type(batch) is not list or any(type(b) is not dict for b in batch)):
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
    return NewMetric(trial_id, group, steps, metrics, run_id, batch, 0.0, values_json, batch_json)


def _long_names(text: str, dicts: Iterable[dict[str, Any]]) -> bool:
    """Whether a name in ``dicts`` (whose JSON is ``text``) is too long to store. A text no
    longer than the limit holds no such name: the names of most reports are not looked at."""
    return len(text) > MAX_METRIC_NAME and metric_names_error(dicts) is not None
