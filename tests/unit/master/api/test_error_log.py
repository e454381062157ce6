"""A bug behind a route leaves its traceback in the master's log once (issue 12 leftovers): the
app logs it and answers 500; the server it runs under (uvicorn, as in a real master) logs
nothing more about it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.inprocess_master import AUTH, InProcessMaster, inprocess_master, served


class Tracebacks(logging.Handler):
    """Every record logged with a traceback, from any logger it is attached to."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        yield m


def test_unexpected_error_is_logged_once(api: InProcessMaster) -> None:
    @api.app.get("/boom")
    def boom() -> None:
        raise RuntimeError("deliberate")

    handler = Tracebacks()
    # uvicorn's loggers stop at "uvicorn" (no propagation to the root): listen there too.
    loggers = [logging.getLogger(name) for name in ("uvicorn", "trialkit")]
    try:
        with served(api.app) as url:
            for log in loggers:
                log.addHandler(handler)
            resp = httpx.get(url + "/boom", headers=AUTH, timeout=30, trust_env=False)
    finally:  # after the server stopped: what it logs about the request (after replying) is in
        for log in loggers:
            log.removeHandler(handler)
    assert resp.status_code == 500
    assert resp.json() == {"detail": "internal error (RuntimeError); see the master log"}
    [record] = handler.records
    assert record.getMessage() == "GET /boom failed" and "deliberate" in str(record.exc_info)
