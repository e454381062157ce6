"""Store queries for trial logs (a mixin of ``Store``)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from ._models import LogRow
from ._types import LogLine


class LogQueries:
    """A trial's log lines: appended by the master, paged by readers."""

    _session: Callable[[], contextlib.AbstractContextManager[Session]]

    def add_logs(self, trial_id: int, run_id: int, lines: Sequence[str]) -> None:
        if not lines:
            return
        now = time.time()
        with self._session() as s:
            s.execute(
                insert(LogRow),
                [{"trial_id": trial_id, "run_id": run_id, "line": ln, "ts": now} for ln in lines],
            )

    def list_logs(
        self,
        trial_id: int,
        *,
        after_id: int = 0,
        limit: int = 10_000,
        max_chars: int | None = None,
    ) -> list[LogLine]:
        """The trial's lines after ``after_id``, oldest first: at most ``limit``, and none past
        the first that brings their text to ``max_chars`` characters (a page of long lines)."""
        cols = (LogRow.id, LogRow.run_id, LogRow.line, LogRow.ts)
        q = (
            select(*cols)
            .where(LogRow.trial_id == trial_id, LogRow.id > after_id)
            .order_by(LogRow.id)
            .limit(limit)
        )
        lines: list[LogLine] = []
        size = 0
        with self._session() as s:
            # Rows, not ORM objects (bench/README.md: log-rows).
            for id_, run_id, line, ts in s.execute(q):
                lines.append(LogLine(id=id_, trial_id=trial_id, run_id=run_id, line=line, ts=ts))
                size += len(line)
                if max_chars is not None and size >= max_chars:
                    break  # the rest is not read: the database steps through rows on demand
        return lines

    def log_id_before_last(self, trial_id: int, count: int) -> int:
        """The id after which the trial's last ``count`` lines start (0: they are all of it),
        found from the end of the log, whatever its length."""
        q = (
            select(LogRow.id)
            .where(LogRow.trial_id == trial_id)
            .order_by(LogRow.id.desc())
            .offset(count)
            .limit(1)
        )
        with self._session() as s:
            return int(s.scalar(q) or 0)
