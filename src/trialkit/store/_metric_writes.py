"""Mixed into Store: writing metric reports, the store's hot path. Many trials' batches go in
one transaction (the master's group commit), each batch stored at most once and only for the
trial's current run."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from sqlalchemy import Table, delete
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from .._json import dumps
from ._errors import StoreError
from ._models import MetricBatchRow, MetricRow, TrialRow
from ._types import TERMINAL_TRIAL_STATES, Delivered, MetricBatch, MetricDelivery, NewMetric

_TERMINAL = frozenset(s.value for s in TERMINAL_TRIAL_STATES)


#: A metric row's columns as the hot path writes them (every column but the key).
METRIC_COLUMNS = (
    "trial_id", "run_id", "group", "steps_completed", "values", "batch_metrics", "reported_at"
)  # fmt: skip
#: Batch keys, as claimed.
BATCH_COLUMNS = ("trial_id", "run_id", "sender", "seq", "stored_at")


def _check_columns(table: Table, expected: tuple[str, ...]) -> None:
    """The hot path's column list must be the table's (a model change must change both)."""
    actual = tuple(c.name for c in table.columns if c.name != "id")  # id: the database's
    if set(actual) != set(expected):
        raise RuntimeError(f"{table.name} has columns {actual}; the metric writes use {expected}")


def _key(batch: MetricBatch) -> tuple[int, int, str, int]:
    return (batch.trial_id, batch.run_id, batch.sender, batch.seq)


def _from_current_run(d: MetricDelivery, current: dict[int, tuple[int, str]]) -> bool:
    """Whether ``d`` may be stored: it names no run, or its trial's current one, not ended."""
    if d.run_id is None:
        return True
    run, state = current.get(d.trial_id, (None, ""))
    return run == d.run_id and state not in _TERMINAL


def _extend_metric_rows(values: list[Any], reports: Sequence[NewMetric], now: float) -> None:
    """Append each report's row values, in METRIC_COLUMNS order, to ``values``."""
    for r in reports:
        values += (
            r.trial_id,
            r.run_id,
            r.group,
            r.steps_completed,
            r.values_json if r.values_json is not None else dumps(r.values),
            r.batch_metrics_json
            if r.batch_metrics_json is not None or r.batch_metrics is None
            else dumps(r.batch_metrics),
            r.reported_at or now,
        )


class MetricWrites:
    """Metric reports in, at most once per batch."""

    #: Rows one INSERT writes (7 parameters each; SQLite allows 32,766 per statement).
    ROWS_PER_INSERT = 1000

    _engine: Engine
    _session: Callable[[], contextlib.AbstractContextManager[Session]]

    def _prepare_metric_writes(self) -> None:
        """Build the driver-level statements once: the hot path skips SQLAlchemy's per-row bind
        processing, several times cheaper per row."""
        metrics, batches = cast(Table, MetricRow.__table__), cast(Table, MetricBatchRow.__table__)
        _check_columns(metrics, METRIC_COLUMNS)
        _check_columns(batches, BATCH_COLUMNS)
        prep = self._engine.dialect.identifier_preparer
        self._mark = "?" if self._engine.dialect.paramstyle == "qmark" else "%s"

        def insert(table: Table, columns: tuple[str, ...]) -> str:
            names = ", ".join(prep.quote(c) for c in columns)
            return f"INSERT INTO {prep.quote(table.name)} ({names}) VALUES {{values}}"

        self._insert_metrics_sql = insert(metrics, METRIC_COLUMNS)
        # ON CONFLICT DO NOTHING ... RETURNING: the same SQL on SQLite (3.35+) and PostgreSQL.
        # A resend's key inserts nothing and is not returned; on PostgreSQL a concurrent insert
        # of the same key waits for the other transaction, then does nothing.
        self._claim_sql = (
            insert(batches, BATCH_COLUMNS)
            + " ON CONFLICT DO NOTHING RETURNING trial_id, run_id, sender, seq"
        )
        self._current_runs_sql = (
            f"SELECT id, run_id, state FROM {prep.quote(TrialRow.__tablename__)} "
            "WHERE id IN ({marks})"
        )

    def add_metrics(self, reports: Sequence[NewMetric], batch: MetricBatch | None = None) -> bool:
        """Store ``reports``; with ``batch``, at most once: False when that batch was already
        stored (a resend after a lost reply), True when its rows were written now."""
        if not reports and batch is None:
            return True
        (outcome,) = self.add_metric_deliveries([MetricDelivery(list(reports), batch)])
        return outcome is Delivered.STORED

    def add_metric_deliveries(self, deliveries: Sequence[MetricDelivery]) -> list[Delivered]:
        """Store many batches in one transaction; what became of each, in order."""
        now = time.time()
        dbapi_error = self._engine.dialect.loaded_dbapi.Error
        try:
            with self._engine.begin() as conn:
                # The driver's own cursor: a statement through SQLAlchemy costs ~10x more, and
                # this runs for every batch of every trial.
                cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
                try:
                    return self._deliver(cursor, deliveries, now)
                finally:
                    cursor.close()
        except (SQLAlchemyError, dbapi_error) as e:
            raise StoreError(f"store error: {e.__class__.__name__}: {e}") from e

    def _deliver(
        self, cursor: Any, deliveries: Sequence[MetricDelivery], now: float
    ) -> list[Delivered]:
        current = self._current_runs(cursor, deliveries)
        live = [_from_current_run(d, current) for d in deliveries]
        claimed = self._claim(
            cursor, [d.batch for d, ok in zip(deliveries, live, strict=True) if ok], now
        )
        outcomes: list[Delivered] = []
        rows: list[Any] = []  # the metric rows' values, flat
        for d, ok in zip(deliveries, live, strict=True):
            if not ok:
                outcomes.append(Delivered.STALE)
            elif d.batch is not None and _key(d.batch) not in claimed:
                outcomes.append(Delivered.DUPLICATE)  # stored before, or earlier in this group
            else:
                if d.batch is not None:
                    claimed.remove(_key(d.batch))
                outcomes.append(Delivered.STORED)
                _extend_metric_rows(rows, d.reports, now)
        self._insert_rows(cursor, self._insert_metrics_sql, rows, len(METRIC_COLUMNS))
        return outcomes

    def _insert_rows(self, cursor: Any, sql: str, values: list[Any], columns: int) -> None:
        """Insert the rows whose values ``values`` holds, flat: one statement per ROWS_PER_INSERT.

        Not ``executemany``: sqlite3 releases the GIL around every row's step, and a thread
        taking the GIL back from a busy event loop waits for Python's switch interval (5 ms),
        measured here as 2,000 rows taking 4.5 s beside a busy thread, 32 ms as 2 statements."""
        step = self.ROWS_PER_INSERT * columns
        for i in range(0, len(values), step):
            chunk = values[i : i + step]
            cursor.execute(sql.format(values=self._marks(len(chunk) // columns, columns)), chunk)

    def _current_runs(
        self, cursor: Any, deliveries: Sequence[MetricDelivery]
    ) -> dict[int, tuple[int, str]]:
        """(run id, state) of each trial whose deliveries must come from its current run."""
        ids = sorted({d.trial_id for d in deliveries if d.run_id is not None})
        if not ids:
            return {}
        cursor.execute(self._current_runs_sql.format(marks=", ".join([self._mark] * len(ids))), ids)
        return {int(i): (int(run or 0), str(state)) for i, run, state in cursor.fetchall()}

    def _claim(
        self, cursor: Any, batches: Sequence[MetricBatch | None], now: float
    ) -> set[tuple[int, int, str, int]]:
        """Insert the batches' keys, a statement per ROWS_PER_INSERT; the keys that were new
        (RETURNING: a key stored before inserts nothing and is not returned)."""
        keys = [b for b in batches if b is not None]
        new: set[tuple[int, int, str, int]] = set()
        for i in range(0, len(keys), self.ROWS_PER_INSERT):
            chunk = keys[i : i + self.ROWS_PER_INSERT]
            params = [v for b in chunk for v in (b.trial_id, b.run_id, b.sender, b.seq, now)]
            marks = self._marks(len(chunk), len(BATCH_COLUMNS))
            cursor.execute(self._claim_sql.format(values=marks), params)
            new.update((int(t), int(r), str(s), int(q)) for t, r, s, q in cursor.fetchall())
        return new

    def _marks(self, rows: int, columns: int) -> str:
        """``(?, ?), (?, ?)`` in the driver's parameter style."""
        one = "(" + ", ".join([self._mark] * columns) + ")"
        return ", ".join([one] * rows)

    def metric_batch_stored(self, batch: MetricBatch) -> bool:
        """Whether ``batch`` was stored already."""
        key = (batch.trial_id, batch.run_id, batch.sender, batch.seq)
        with self._session() as s:
            return s.get(MetricBatchRow, key) is not None

    def forget_metric_batches(self, trial_id: int, through_run: int) -> int:
        """Delete the batch keys of the trial's runs up to ``through_run`` (they ended, so no
        resend of theirs can come); the number deleted. Their metric rows stay."""
        with self._session() as s:
            result = s.execute(
                delete(MetricBatchRow).where(
                    MetricBatchRow.trial_id == trial_id, MetricBatchRow.run_id <= through_run
                )
            )
            return int(result.rowcount)  # type: ignore[attr-defined]
