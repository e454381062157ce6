"""The metrics route encodes each report's values once, while validating them, and the store
keeps that text (it no longer walks every value, then encodes it again in Python): what is
stored reads back as sent, non-finite values become Determined's strings, and values that
cannot be stored and sent back are refused as before."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.inprocess_master import InProcessMaster, inprocess_master
from trialkit._json import dumps
from trialkit.master.api._schemas import MAX_JSON_DEPTH, encode_storable

METRICS = "/api/v1/trials/1/metrics"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        m.create()  # experiment 1 with trial 1 (run 0)
        yield m


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth - 1):
        value = [value]
    return value


def _stored_text(api: InProcessMaster) -> list[tuple[str, str | None]]:
    with api.store._engine.connect() as conn:  # the raw column text, as the store keeps it
        rows = conn.exec_driver_sql('SELECT "values", batch_metrics FROM metrics ORDER BY id')
        return [(values, batch) for values, batch in rows]


def test_stored_values_read_back_as_sent(api: InProcessMaster) -> None:
    metrics = {
        "loss": 0.1,
        "tiny": 1e-7,
        "huge": 1e300,
        "big_int": 2**70,
        "nan": math.nan,
        "inf": -math.inf,
        "text": 'ünïcode ✓ "quoted" \\ \n',
        "nested": {"a": [1, 2.5, None, True, {"b": "c"}]},
        "deep": _nested(MAX_JSON_DEPTH),  # its innermost value at the deepest level allowed
    }
    batches = [{"loss": 0.5, "batch": 1}, {"loss": math.nan, "batch": 2}]
    report = {"group": "training", "steps_completed": 3, "metrics": metrics}
    body = {"reports": [{**report, "batch_metrics": batches}, {**report, "steps_completed": 4}]}
    assert api.call("POST", METRICS, body).json() == {"stored": 2, "duplicate": False}
    expected = {**metrics, "nan": "NaN", "inf": "-Infinity"}
    stored = api.store.list_metrics(1, "training")
    assert [m.values for m in stored] == [expected, expected]
    (values, batch), (_, no_batch) = _stored_text(api)
    assert json.loads(values, parse_constant=_refuse) == expected  # strict JSON: no bare NaN
    assert json.loads(batch) == [{"loss": 0.5, "batch": 1}, {"loss": "NaN", "batch": 2}]
    assert no_batch is None


def _refuse(token: str) -> None:
    raise AssertionError(f"bare {token} in stored JSON")


@pytest.mark.parametrize("field", ["metrics", "batch_metrics"])
def test_too_deep_or_invalid_unicode_is_refused_naming_the_field(
    api: InProcessMaster, field: str
) -> None:
    deep = {"x": _nested(MAX_JSON_DEPTH + 1)}  # one level deeper than the limit
    for value, why in ((deep, "nested more than"), ({"\ud800": 1}, "unpaired surrogate")):
        report: dict[str, Any] = {"group": "training", "steps_completed": 1, "metrics": {}}
        report[field] = value if field == "metrics" else [value]
        resp = api.call("POST", METRICS, {"reports": [report]})
        assert resp.status_code == 422, resp.text
        assert f"body.reports.0.{field}" in resp.text and why in resp.text, resp.text
    assert api.store.count_metrics(1) == 0


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), _json_values, max_size=6))
def test_encoding_means_what_the_store_encoder_meant(value: dict[str, Any]) -> None:
    """The master's encoder and the store's own (``dumps``, used by local mode) agree."""
    try:
        text = encode_storable(value)
    except ValueError:
        return  # a lone surrogate from st.text(): refused, as before
    assert json.loads(text, parse_constant=_refuse) == json.loads(dumps(value))
