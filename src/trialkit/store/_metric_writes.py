"""Mixed into Store: writing metric reports, the store's hot path. Many trials' batches go in
one transaction (the master's group commit), each batch stored at most once and only for the
trial's current run."""

from __future__ import annotations

import contextlib
import operator
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


def _insert_sql(engine: Engine, table: Table) -> tuple[str, list[str]]:
    """A plain INSERT of every column but the key, quoted and in the driver's parameter style
    (``?`` for sqlite3, ``%s`` for psycopg), and the columns in order."""
    prep = engine.dialect.identifier_preparer
    columns = [c.name for c in table.columns if not c.primary_key]
    mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
    sql = (
        f"INSERT INTO {prep.quote(table.name)} ({', '.join(prep.quote(c) for c in columns)}) "
        f"VALUES ({', '.join([mark] * len(columns))})"
    )
    return sql, columns


def _key(batch: MetricBatch) -> tuple[int, int, str, int]:
    return (batch.trial_id, batch.run_id, batch.sender, batch.seq)


def _from_current_run(d: MetricDelivery, current: dict[int, tuple[int, str]]) -> bool:
    """Whether ``d`` may be stored: it names no run, or its trial's current one, not ended."""
    if d.run_id is None:
        return True
    run, state = current.get(d.trial_id, (None, ""))
    return run == d.run_id and state not in _TERMINAL


def _batch_json(report: NewMetric) -> str | None:
    """The report's batch metrics as JSON text (None: it sent none)."""
    if report.batch_metrics_json is not None or report.batch_metrics is None:
        return report.batch_metrics_json
    return dumps(report.batch_metrics)


class MetricWrites:
    """Metric reports in, at most once per batch."""

    #: Batch keys one INSERT claims (5 parameters each; SQLite allows 32,766 per statement).
    CLAIMS_PER_STATEMENT = 1000

    _engine: Engine
    _session: Callable[[], contextlib.AbstractContextManager[Session]]

    def _prepare_metric_writes(self) -> None:
        """Build the driver-level INSERTs once: the hot path skips SQLAlchemy's per-row bind
        processing, several times cheaper per row."""
        self._insert_metrics_sql, columns = _insert_sql(
            self._engine, cast(Table, MetricRow.__table__)
        )
        self._metric_row = operator.itemgetter(*columns)  # a row dict -> values in column order
        prep = self._engine.dialect.identifier_preparer
        self._mark = "?" if self._engine.dialect.paramstyle == "qmark" else "%s"
        # ON CONFLICT DO NOTHING ... RETURNING: the same SQL on SQLite (3.35+) and PostgreSQL.
        # A resend's key inserts nothing and is not returned; on PostgreSQL a concurrent insert
        # of the same key waits for the other transaction, then does nothing.
        batches = cast(Table, MetricBatchRow.__table__)
        claim_columns = [c.name for c in batches.columns]
        self._batch_row = operator.itemgetter(*claim_columns)
        self._claim_sql = (
            f"INSERT INTO {prep.quote(batches.name)} "
            f"({', '.join(prep.quote(c) for c in claim_columns)}) VALUES {{values}} "
            "ON CONFLICT DO NOTHING RETURNING trial_id, run_id, sender, seq"
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
        rows: list[tuple[Any, ...]] = []
        for d, ok in zip(deliveries, live, strict=True):
            if not ok:
                outcomes.append(Delivered.STALE)
            elif d.batch is not None and _key(d.batch) not in claimed:
                outcomes.append(Delivered.DUPLICATE)  # stored before, or earlier in this group
            else:
                if d.batch is not None:
                    claimed.remove(_key(d.batch))
                outcomes.append(Delivered.STORED)
                rows.extend(self._metric_rows(d.reports, now))
        if rows:
            cursor.executemany(self._insert_metrics_sql, rows)
        return outcomes

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
        """Insert the batches' keys, a statement per 1,000; the keys that were new (RETURNING:
        a key stored before inserts nothing and is not returned)."""
        rows = [
            self._batch_row(
                {"trial_id": b.trial_id, "run_id": b.run_id, "sender": b.sender, "seq": b.seq}
                | {"stored_at": now}
            )
            for b in batches
            if b is not None
        ]
        new: set[tuple[int, int, str, int]] = set()
        for i in range(0, len(rows), self.CLAIMS_PER_STATEMENT):
            chunk = rows[i : i + self.CLAIMS_PER_STATEMENT]
            params = [value for row in chunk for value in row]
            cursor.execute(self._claim_sql.format(values=self._marks(len(chunk), 5)), params)
            new.update((int(t), int(r), str(s), int(q)) for t, r, s, q in cursor.fetchall())
        return new

    def _marks(self, rows: int, columns: int) -> str:
        """``(?, ?), (?, ?)`` in the driver's parameter style."""
        one = "(" + ", ".join([self._mark] * columns) + ")"
        return ", ".join([one] * rows)

    def _metric_rows(self, reports: Sequence[NewMetric], now: float) -> list[tuple[Any, ...]]:
        row = self._metric_row
        return [
            row(
                {
                    "trial_id": r.trial_id,
                    "run_id": r.run_id,
                    "group": r.group,
                    "steps_completed": r.steps_completed,
                    "values": r.values_json if r.values_json is not None else dumps(r.values),
                    "batch_metrics": _batch_json(r),
                    "reported_at": r.reported_at or now,
                }
            )
            for r in reports
        ]

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
