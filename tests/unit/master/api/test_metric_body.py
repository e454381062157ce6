"""The metric body's one owner (``_metric_body``): the master reads stream messages of the Core
API's shape without pydantic (``plain_stream_delivery``); whatever that path accepts,
``MetricsBody`` must accept too and turn into the same delivery, and whatever it does not,
``MetricsBody`` judges: a stream message and a POST of the same body get the same 422 lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.inprocess_master import AUTH, inprocess_master
from trialkit.master.api._metric_body import (
    BodyRefused,
    MetricsBody,
    plain_stream_delivery,
    stream_delivery,
)
from trialkit.master.api._metric_body import delivery as _delivery
from trialkit.master.api._schemas import MAX_INT, error_lines
from trialkit.rest import MAX_METRIC_NAME
from trialkit.store import MetricDelivery

_numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
)
_metrics = st.dictionaries(st.text(max_size=6), _numbers, max_size=4)
_report = st.fixed_dictionaries(
    {
        "group": st.sampled_from(["training", "validation", "inference"]),
        "steps_completed": st.integers(0, MAX_INT),
        "metrics": _metrics,
    },
    optional={"batch_metrics": st.one_of(st.none(), st.lists(_metrics, max_size=2))},
)
_valid_body = st.fixed_dictionaries(
    {
        "reports": st.lists(_report, max_size=3),
        "seq": st.integers(0, MAX_INT),
        "sender": st.from_regex(r"[A-Za-z0-9_-]{1,32}", fullmatch=True),
    },
    optional={"run_id": st.integers(0, MAX_INT)},
)
#: Values that are wrong somewhere (or right elsewhere): each mutation puts one in one place.
_odd = st.one_of(
    st.sampled_from(
        [-1, MAX_INT + 1, True, 1.0, "1", None, "", "a.b", "x" * 65, "ünï", "\ud800", "bad s"]
    ),
    st.just([1]),
    st.just({}),
    st.lists(st.integers(), max_size=2),
)
_places = st.sampled_from(
    ["run_id", "seq", "sender", "reports", "extra", "group", "steps_completed", "metrics",
     "batch_metrics", "report_extra"]
)  # fmt: skip


#: Metric names about the limit (MAX_METRIC_NAME), escaped in JSON or not.
_names = st.builds(
    lambda length, char: char * length,
    st.sampled_from([MAX_METRIC_NAME - 1, MAX_METRIC_NAME, MAX_METRIC_NAME + 1, 1000]),
    st.sampled_from(["m", '"', "é"]),
)


@st.composite
def _bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A body the Core API could send, with up to two fields changed to odd values and maybe
    a metric name about the length limit."""
    body = draw(_valid_body)
    for _ in range(draw(st.integers(0, 2))):
        place, value = draw(_places), draw(_odd)
        reports = body["reports"]
        if place in ("run_id", "seq", "sender", "reports", "extra"):
            body[place] = value
        elif isinstance(reports, list) and reports and isinstance(reports[0], dict):
            reports[0]["extra" if place == "report_extra" else place] = value
    reports = body["reports"]
    if draw(st.booleans()) and isinstance(reports, list) and reports:
        report = reports[-1]
        if isinstance(report, dict):
            where = draw(st.sampled_from(["metrics", "batch_metrics"]))
            metrics = {draw(_names): 1.0}
            report[where] = metrics if where == "metrics" else [{"ok": 1}, metrics]
    return body


def _pydantic(message: str) -> MetricsBody | None:
    try:
        return MetricsBody.model_validate_json(message)
    except ValidationError:
        return None


def _message(body: dict[str, Any]) -> str | None:
    try:
        return json.dumps(body)  # bare NaN/Infinity kept, as a hand-made client might send
    except UnicodeEncodeError:
        return None


def _pydantic_outcome(message: str) -> MetricDelivery | list[str]:
    """What ``MetricsBody`` alone makes of a stream message, read as FastAPI reads a POST: its
    delivery, or its 422 lines."""
    try:
        body = MetricsBody.model_validate(json.loads(message))
    except ValidationError as e:
        return error_lines(e.errors(), ("body",))
    if body.sender is None or body.seq is None:
        return ["body.seq: a stream needs sender and seq"]
    return _delivery(3, body)


def _stream_outcome(message: str) -> MetricDelivery | list[str]:
    try:
        return stream_delivery(3, message)
    except BodyRefused as e:
        return e.lines


@settings(max_examples=800, deadline=None)
@given(_bodies())
def test_what_the_fast_path_accepts_pydantic_accepts_the_same(body: dict[str, Any]) -> None:
    """Same input, same accepted values or the same 422 lines, fast reader or not."""
    message = _message(body)
    if message is None:
        return
    assert _stream_outcome(message) == _pydantic_outcome(message)
    fast = plain_stream_delivery(3, message)
    if fast is None:
        return
    validated = _pydantic(message)
    assert validated is not None, message
    assert validated.sender is not None and validated.seq is not None
    assert fast == _delivery(3, validated)


@given(
    st.lists(
        st.builds(
            lambda step, loss, group: {
                "group": group,
                "steps_completed": step,
                "metrics": {"loss": loss, "acc": step / 7},
            },
            st.integers(0, MAX_INT),
            st.floats(allow_nan=False, allow_infinity=False),
            st.sampled_from(["training", "validation"]),
        ),
        max_size=20,
    ),
    st.integers(0, MAX_INT),
)
def test_the_core_apis_messages_take_the_fast_path(reports: list[Any], seq: int) -> None:
    message = json.dumps({"run_id": 2, "reports": reports, "sender": "0123abcd", "seq": seq})
    fast = plain_stream_delivery(3, message)
    assert fast is not None
    validated = _pydantic(message)
    assert validated is not None and fast == _delivery(3, validated)


@pytest.mark.parametrize("where", ["metrics", "batch_metrics"])
def test_both_paths_refuse_a_metric_name_over_the_limit_and_take_one_at_it(where: str) -> None:
    """Issue 31 item 7: the fast path leaves a long name to pydantic, which names the metric."""

    def message(name: str) -> str:
        metrics = {name: 1.0}
        report: dict[str, Any] = {"group": "training", "steps_completed": 1, "metrics": {}}
        report[where] = metrics if where == "metrics" else [metrics]
        return json.dumps({"run_id": 0, "sender": "s", "seq": 1, "reports": [report]})

    at_limit = message("m" * MAX_METRIC_NAME)
    fast = plain_stream_delivery(3, at_limit)
    validated = _pydantic(at_limit)
    assert fast is not None and validated is not None and fast == _delivery(3, validated)
    over = message("m" * (MAX_METRIC_NAME + 1))
    assert plain_stream_delivery(3, over) is None
    with pytest.raises(ValidationError, match="metric name 'mmm.*257 characters, over the 256"):
        MetricsBody.model_validate_json(over)


def test_non_finite_literals_are_left_to_pydantic() -> None:
    message = '{"run_id": 0, "sender": "s", "seq": 1, "reports": [{"group": "training", "steps_completed": 1, "metrics": {"x": NaN}}]}'
    assert plain_stream_delivery(3, message) is None


@pytest.mark.parametrize(
    "body",
    [
        {
            "sender": "s",
            "seq": 1,
            "reports": [{"group": "a.b", "steps_completed": 1, "metrics": {}}],
        },
        {
            "sender": "s",
            "seq": 1,
            "reports": [{"group": "t", "steps_completed": -1, "metrics": {}}],
        },
        {"sender": "bad s", "seq": 1, "reports": []},
        {"sender": "s", "seq": 1, "reports": [{"group": "t", "steps_completed": 1, "metrics": 1}]},
    ],
)
def test_the_stream_refuses_with_the_lines_of_the_posts_422(
    tmp_path: Path, body: dict[str, Any]
) -> None:
    """A real in-process master: the POST and the stream answer one bad body alike."""
    with inprocess_master(tmp_path / "master") as m:
        m.create()
        posted = m.call("POST", "/api/v1/trials/1/metrics", body)
        assert posted.status_code == 422
        with m.client.websocket_connect("/api/v1/trials/1/metrics/stream", headers=AUTH) as ws:
            ws.send_text(json.dumps(body))
            answer = ws.receive_json()
    assert answer["status"] == 422
    assert answer["detail"]["errors"] == posted.json()["detail"]["errors"]
