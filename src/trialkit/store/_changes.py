"""A number that changes after every committed write of this process, so that a watcher (the
web UI's event streams) can skip reading the store while nothing changed."""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import Engine, event

_WROTE = "trialkit_wrote"


def mark_written(conn: Any) -> None:
    """Count ``conn`` (a Connection) as a writer: for writes on the driver's own cursor, which
    SQLAlchemy's events do not see."""
    conn.info[_WROTE] = True


class WriteCounter:
    """Counts the connections given back to the pool after they wrote (INSERT, UPDATE, DELETE),
    sessions and Core connections alike: a connection is given back after its commit (or
    rollback, which counts too: a spurious change costs a watcher one read, a missed one a
    stale page)."""

    def __init__(self, engine: Engine) -> None:
        self._count = 0
        self._lock = threading.Lock()
        event.listen(engine, "after_cursor_execute", self._mark)
        event.listen(engine, "checkin", self._count_if_marked)  # the pool's, kept by dispose()

    @property
    def value(self) -> int:
        return self._count

    @staticmethod
    def _mark(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: Any) -> None:
        if context is not None and (context.isinsert or context.isupdate or context.isdelete):
            mark_written(conn)

    def _count_if_marked(self, dbapi_connection: Any, record: Any) -> None:
        if record is not None and record.info.pop(_WROTE, False):
            with self._lock:
                self._count += 1
