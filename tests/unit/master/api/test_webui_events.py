"""The web UI's event streams on an in-process master served on loopback: an open stream reads
the store only after a write (or, for other processes' writes, now and then), and still tells
every change."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import event

from tests.inprocess_master import AUTH, InProcessMaster, inprocess_master, served
from trialkit.master.api import _ui as _ui_routes
from trialkit.store import Store


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InProcessMaster]:
    monkeypatch.setattr(_ui_routes, "EVENT_POLL_SECONDS", 0.01)  # 50 looks in half a second
    with inprocess_master(tmp_path / "master") as m:
        m.create()  # experiment 1
        yield m


def _data(lines: Iterator[str]) -> dict:
    return json.loads(next(ln for ln in lines if ln.startswith("data:"))[len("data:") :])


def test_an_idle_stream_does_not_read_the_store(api: InProcessMaster) -> None:
    statements: list[str] = []
    event.listen(api.store._engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    with (
        served(api.app) as url,
        httpx.Client(base_url=url, headers=AUTH, timeout=10, trust_env=False) as client,
        client.stream("GET", "/api/v1/experiments/1/events") as resp,
    ):
        lines = resp.iter_lines()
        assert _data(lines)["state"] == "ACTIVE"
        statements.clear()
        time.sleep(0.5)
        idle_reads = len(statements)
        api.store.update_experiment(1, progress=0.5)  # a write: told at the next look
        assert _data(lines)["progress"] == 0.5
    assert idle_reads == 0, statements[:5]


def test_another_process_write_is_told_at_the_next_refresh(
    api: InProcessMaster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ui_routes, "EVENT_REFRESH_SECONDS", 0.2)
    with (
        served(api.app) as url,
        httpx.Client(base_url=url, headers=AUTH, timeout=10, trust_env=False) as client,
        client.stream("GET", "/api/v1/events/experiments") as resp,
    ):
        lines = resp.iter_lines()
        assert _data(lines)["progress"] == {"1": 0.0}
        other = Store.at(tmp_path / "master")  # another process's store: this one's writes
        try:
            other.update_experiment(1, progress=0.25)
        finally:
            other.close()
        assert _data(lines)["progress"] == {"1": 0.25}
