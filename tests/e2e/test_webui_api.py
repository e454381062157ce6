"""The routes the web UI added, on a real master with a real trial: the experiment's event
stream (server-sent events) and one metric of every trial, read incrementally."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from trialkit.client import start_background

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


def _events(
    master: Master, exp: int | None, until: Any, timeout: float = 90
) -> list[dict[str, Any]]:
    """Events of an experiment's stream (None: the experiments list's), read until
    ``until(events)`` holds."""
    headers = {"Authorization": f"Bearer {master.client.token}"}
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    route = "events/experiments" if exp is None else f"experiments/{exp}/events"
    url = f"{master.client.url}/api/v1/{route}"
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


def test_the_experiments_list_stream_tells_a_new_experiment(master: Master, tmp_path: Path) -> None:
    first = _events(master, None, lambda ev: True)[-1]
    assert first == {"states": {}, "progress": {}, "archived": [], "last_metric_id": 0}
    write_script(tmp_path / "m", "trial.py", TRIAL)
    seen: list[int] = []

    def created(events: list[dict[str, Any]]) -> bool:
        if not seen:  # the first event is the list as it is; create one while the stream is open
            seen.append(master.create(CONFIG, tmp_path / "m"))
        return str(seen[0]) in events[-1]["states"]

    events = _events(master, None, created)
    assert events[-1]["states"][str(seen[0])] in {"ACTIVE", "COMPLETED"}
    done = _events(master, None, lambda ev: ev[-1]["states"][str(seen[0])] == "COMPLETED")
    assert done[-1]["last_metric_id"] > 0 and done[-1]["progress"][str(seen[0])] == 1.0


def test_an_open_event_stream_keeps_an_idle_master_up(master: Master) -> None:
    master.cli("master", "down")
    master.client.close()
    master.client = start_background(master.home, slots=2, idle_timeout=2)
    pid_file = master.home / "master.json"
    pid = json.loads(pid_file.read_text())["pid"]
    headers = {"Authorization": f"Bearer {master.client.token}"}
    url = f"{master.client.url}/api/v1/events/experiments"
    with httpx.stream("GET", url, headers=headers, timeout=30, trust_env=False) as resp:
        assert resp.status_code == 200
        lines = resp.iter_lines()  # held: a dropped iterator would close the stream
        while not next(lines).startswith("data: "):
            pass
        time.sleep(8)  # four idle timeouts with nothing but the open stream (a UI page)
        assert json.loads(pid_file.read_text())["pid"] == pid, "the master stopped"
        assert httpx.get(f"{master.client.url}/health", trust_env=False).status_code == 200
    # Closed: the master is idle now and stops itself.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and json.loads(pid_file.read_text())["pid"] == pid:
        time.sleep(0.2)
    assert json.loads(pid_file.read_text())["pid"] is None, "the idle master is still up"
    assert "idle for 2 s" in (master.home / "master.log").read_text()
