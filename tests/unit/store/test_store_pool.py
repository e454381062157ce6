"""The store's connection pool holds as many connections as the master has request threads:
40 requests at once each get a connection instead of queueing behind SQLAlchemy's default 15."""

from __future__ import annotations

import threading
from pathlib import Path

from sqlalchemy import text

from trialkit.store import Store
from trialkit.store._connection import POOL_SIZE


def test_as_many_connections_at_once_as_request_threads(tmp_path: Path) -> None:
    store = Store.at(tmp_path)
    barrier = threading.Barrier(POOL_SIZE, timeout=20)  # the pool timeout is 30 s
    errors: list[BaseException] = []

    def hold_a_connection() -> None:
        try:
            with store._engine.connect() as conn:
                conn.execute(text("SELECT 1"))
                barrier.wait()  # every thread holds its connection at this point
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=hold_a_connection) for _ in range(POOL_SIZE)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        store.close()
    assert not errors, errors[0]


def test_in_memory_sqlite_keeps_its_own_pool() -> None:
    store = Store("sqlite://")
    try:
        assert store.count_metrics(1, "training") == 0
    finally:
        store.close()
