"""Hostile input to the REST API is refused with a 4xx naming the field, never a 500
(issue 12 item 8): ints beyond the store's columns, NaN/inf, unbounded polls, bad base64."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.inprocess_master import SINGLE, InProcessMaster, inprocess_master

BIG = 2**63


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        yield m


def _with_length(length: Any) -> dict[str, Any]:
    return {**SINGLE, "searcher": {**SINGLE["searcher"], "max_length": length}}


def assert_refused(resp: Any, field: str) -> None:
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text)
    assert field in resp.text, resp.text


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("GET", f"/api/v1/experiments/{BIG}", None, "experiment_id"),
        ("GET", f"/api/v1/trials/{BIG}", None, "trial_id"),
        ("GET", f"/api/v1/trials/1/logs?after_id={BIG}", None, "after_id"),
        ("GET", f"/api/v1/trials/1/logs?limit={BIG}", None, "limit"),
        ("GET", "/api/v1/trials/1/logs?limit=-1", None, "limit"),
        ("POST", "/api/v1/trials/1/metrics", {"run_id": BIG, "reports": []}, "run_id"),
        (
            "POST",
            "/api/v1/trials/1/metrics",
            {"reports": [{"group": "training", "steps_completed": BIG, "metrics": {}}]},
            "steps_completed",
        ),
        ("POST", "/api/v1/trials/1/checkpoints", {"uuid": "u", "steps_completed": BIG}, "steps"),
        ("POST", "/api/v1/trials/1/ack_preemption", {"run_id": BIG}, "run_id"),
        ("POST", "/api/v1/trials/1/progress", {"progress": float("nan")}, "progress"),
        ("POST", "/api/v1/trials/1/early_exit", {"reason": "x" * 100}, "reason"),
        ("GET", "/api/v1/checkpoints/" + "u" * 200, None, "uuid"),
        ("POST", "/api/v1/experiments", {"config": _with_length(10**30)}, "max_length"),
        (
            "POST",
            "/api/v1/experiments",
            {"config": _with_length({"batches": 10**30})},
            "max_length",
        ),
        ("POST", "/api/v1/experiments", {"config": _with_length(2**40)}, "max_length"),
        (
            "POST",
            "/api/v1/experiments",
            {"config": {**SINGLE, "hyperparameters": {"x": BIG}}},
            "hyperparameters.x",
        ),
        (
            "POST",
            "/api/v1/experiments",
            {"config": SINGLE, "model_def": "!!not base64"},
            "model_def",
        ),
    ],
)
def test_hostile_input_is_a_4xx_naming_the_field(
    api: InProcessMaster, method: str, path: str, body: Any, field: str
) -> None:
    api.create()  # experiment 1, trial 1
    assert_refused(api.call(method, path, body), field)


def test_refused_experiment_is_not_left_behind(api: InProcessMaster) -> None:
    """searcher.max_length: 10**30 once created an experiment that stayed ACTIVE forever."""
    resp = api.call("POST", "/api/v1/experiments", {"config": _with_length({"batches": 10**30})})
    assert_refused(resp, "searcher.max_length")
    assert api.store.list_experiments() == []


def test_poll_with_nan_timeout_is_refused_at_once(api: InProcessMaster) -> None:
    exp = api.create()
    for path in (
        f"/api/v1/experiments/{exp}/searcher/events?timeout_seconds=nan",
        "/api/v1/trials/1/preemption?timeout_seconds=nan",
        "/api/v1/trials/1/preemption?timeout_seconds=inf",
        "/api/v1/trials/1/preemption?timeout_seconds=-1",
    ):
        start = time.monotonic()
        assert_refused(api.call("GET", path), "timeout_seconds")
        assert time.monotonic() - start < 5


def test_unexpected_error_is_one_json_line(api: InProcessMaster) -> None:
    """A bug behind a route answers 500 with one line, never an HTML page or a traceback."""

    @api.app.get("/boom")
    def boom() -> None:
        raise RuntimeError("deliberate")

    resp = api.call("GET", "/boom")
    assert resp.status_code == 500
    assert resp.json() == {"detail": "internal error (RuntimeError); see the master log"}


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/api/v1/trials/1/metrics",
            {"reports": [{"group": "g", "steps_completed": 1, "metrics": {"\ud800": 1}}]},
            "body.reports.0.metrics",
        ),
        (
            "/api/v1/trials/1/metrics",
            {"reports": [{"group": "g", "steps_completed": 1, "metrics": {"x": _deep(500)}}]},
            "body.reports.0.metrics",
        ),
        (
            "/api/v1/trials/1/checkpoints",
            {
                "uuid": "c1",
                "steps_completed": 1,
                "metadata": {"note": "\udc80"},
                "storage": {"type": "shared_fs", "host_path": "/tmp/x"},
            },
            "body.metadata",
        ),
        ("/api/v1/experiments", {"config": {**SINGLE, "description": "\ud800"}}, "description"),
    ],
)
def test_values_that_cannot_be_stored_and_sent_back_are_refused(
    api: InProcessMaster, path: str, body: Any, field: str
) -> None:
    """A lone surrogate was stored, then every read of it failed with a 500; so did deep JSON."""
    api.create()
    assert_refused(api.call("POST", path, body), field)
    assert api.call("GET", "/api/v1/trials/1").status_code == 200
    assert api.store.count_metrics(1) == 0 and api.store.list_checkpoints() == []


LONG_NAME = "loss_" + "x" * 1_000_000


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"progress": 1e308}, "body.progress"),
        ({"progress": -5}, "body.progress"),
        ({"progress": 1.5}, "body.progress"),
        ({"progress": -1, "is_raw": True}, "body.progress"),
    ],
)
def test_progress_out_of_bounds_is_a_422_naming_the_field(
    api: InProcessMaster, body: dict[str, Any], field: str
) -> None:
    """Issue 31 item 7: a trial's progress is a share in [0, 1] (a raw length: not negative)."""
    api.create()
    resp = api.call("POST", "/api/v1/trials/1/progress", body)
    assert resp.status_code == 422, resp.text
    assert field in resp.text, resp.text
    assert api.store.get_trial(1).progress in (None, 0.0)


def test_progress_within_bounds_is_stored(api: InProcessMaster) -> None:
    api.create()
    for value in (0, 0.5, 1):
        assert api.call("POST", "/api/v1/trials/1/progress", {"progress": value}).status_code == 200
        assert api.store.get_trial(1).progress == value


@pytest.mark.parametrize(
    ("report", "field"),
    [
        ({"metrics": {LONG_NAME: 1.0}}, "body.reports.0.metrics"),
        (
            {"metrics": {"loss": 1.0}, "batch_metrics": [{"a": 1}, {LONG_NAME: 1}]},
            "body.reports.0.batch_metrics",
        ),
    ],
)
def test_a_metric_name_over_256_characters_is_refused_naming_it(
    api: InProcessMaster, report: dict[str, Any], field: str
) -> None:
    """Issue 31 item 7: a 1,000,000-character name was stored; now a 422 naming the metric."""
    api.create()
    body = {"reports": [{"group": "training", "steps_completed": 1, **report}]}
    resp = api.call("POST", "/api/v1/trials/1/metrics", body)
    assert resp.status_code == 422, resp.text[:500]
    [line] = resp.json()["detail"]["errors"]
    assert line.startswith(field), line[:300]
    assert "metric name 'loss_xxx" in line and "1000005 characters, over the 256" in line, line
    assert len(line) < 300
    assert api.store.count_metrics(1) == 0
    ok = {"reports": [{"group": "training", "steps_completed": 1, "metrics": {"y" * 256: 1}}]}
    assert api.call("POST", "/api/v1/trials/1/metrics", ok).json()["stored"] == 1
