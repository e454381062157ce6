"""Shared fixtures: each test gets its own TRIALKIT_HOME and no cluster info (so ``core.init()``
runs in local mode against a fresh store), and must not leak trialkit threads or a SIGTERM handler."""

from __future__ import annotations

import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.postgres_server import PostgresServer, postgres_server_fixture

_CALL_PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    if report.when == "call":
        item.stash[_CALL_PASSED] = report.passed
    return report


def _trialkit_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("trialkit-") and t.is_alive()}


@pytest.fixture(autouse=True)
def trialkit_home(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> Iterator[Path]:
    """The test's TRIALKIT_HOME, removed when the test passed (as tmp_path is, with pyproject's
    tmp_path_retention_policy = "failed"): a full run's checkpoints would otherwise fill the disk."""
    home = tmp_path_factory.mktemp("trialkit-home")
    monkeypatch.setenv("TRIALKIT_HOME", str(home))
    monkeypatch.delenv("TRIALKIT_CLUSTER_INFO", raising=False)
    before = _trialkit_threads()
    sigterm = signal.getsignal(signal.SIGTERM)
    yield home
    handler_left = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, sigterm)  # restore first so one failure does not cascade
    deadline = time.monotonic() + 1.0
    while (leaked := _trialkit_threads() - before) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert handler_left == sigterm, f"the test left SIGTERM handled by {handler_left!r}"
    assert not leaked, f"the test leaked threads: {sorted(t.name for t in leaked)}"
    if request.node.stash.get(_CALL_PASSED, False):
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the session (skips when the binaries or psycopg are missing)."""
    yield from postgres_server_fixture()
