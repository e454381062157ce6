"""The routes the web UI added, on a real master with a real trial: the experiment's event
stream (server-sent events) and one metric of every trial, read incrementally."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..integration.conftest import write_script
from .conftest import Master

pytestmark = pytest.mark.integration

TRIAL = """
import time
from trialkit import core

with core.init() as ctx:
    for step in range(1, 41):
        time.sleep(0.1)
        ctx.train.report_validation_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
"""

CONFIG = {
    "name": "events",
    "entrypoint": "python3 trial.py",
    "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 40}},
    "max_restarts": 0,
}


def _events(master: Master, exp: int, until: Any, timeout: float = 90) -> list[dict[str, Any]]:
    """Events of the stream, read until ``until(events)`` holds."""
    headers = {"Authorization": f"Bearer {master.client.token}"}
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    url = f"{master.client.url}/api/v1/experiments/{exp}/events"
    with httpx.stream("GET", url, headers=headers, timeout=30, trust_env=False) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if line.startswith("data: "):
                seen.append(json.loads(line[len("data: ") :]))
                if until(seen):
                    return seen
            assert time.monotonic() < deadline, f"no such event in {timeout}s: {seen[-3:]}"
    raise AssertionError(f"the stream ended: {seen[-3:]}")


def test_events_tell_new_metrics_and_states(master: Master, tmp_path: Path) -> None:
    write_script(tmp_path / "m", "trial.py", TRIAL)
    exp = master.create(CONFIG, tmp_path / "m")
    events = _events(master, exp, lambda ev: ev[-1]["last_metric_id"] > 0)
    first = events[-1]
    assert first["experiment_id"] == exp and first["state"] == "ACTIVE"
    path = f"/api/v1/experiments/{exp}/metrics"
    before = master.client.request("GET", path)
    assert before["metric"] == "loss" and before["group"] == "validation"
    [series] = before["series"]
    events = _events(master, exp, lambda ev: ev[-1]["state"] == "COMPLETED")
    assert events[-1]["trials"] == {str(series["trial_id"]): "COMPLETED"}
    after = master.client.request("GET", path, params={"after_id": before["last_id"]})
    [more] = after["series"]
    # Only the rows after last_id: together, every step once, in order.
    assert series["steps"] + more["steps"] == list(range(1, 41))
    assert more["values"][-1] == pytest.approx(1 / 40)
    assert master.client.request("GET", path, params={"after_id": after["last_id"]}) == {
        "group": "validation",
        "metric": "loss",
        "series": [],
        "last_id": after["last_id"],
    }


def test_ui_routes_answer_404_for_unknown_experiments(master: Master) -> None:
    headers = {"Authorization": f"Bearer {master.client.token}"}
    with httpx.Client(base_url=master.client.url, headers=headers, trust_env=False) as http:
        for route in ("events", "metrics", "tensorboards"):
            resp = http.get(f"/api/v1/experiments/999/{route}")
            assert resp.status_code == 404, route
            assert "999" in resp.json()["detail"]
