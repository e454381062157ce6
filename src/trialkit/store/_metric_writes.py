"""Mixed into Store: writing metric reports, the store's hot path. Many trials' batches go in
one transaction (the master's group commit), each batch stored at most once and only for the
trial's current run."""

from __future__ import annotations

import abc
import contextlib
import json
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from sqlalchemy import Table, delete
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from .._json import dumps
from ._changes import mark_written
from ._models import MetricBatchRow, MetricRow, TrialRow
from ._retry import repeatable, store_error
from ._types import TERMINAL_TRIAL_STATES, Delivered, MetricBatch, MetricDelivery, NewMetric

_TERMINAL = frozenset(s.value for s in TERMINAL_TRIAL_STATES)


#: A metric row's columns as the hot path writes them (every column but the key).
METRIC_COLUMNS = (
    "trial_id", "run_id", "group", "steps_completed", "values", "batch_metrics", "reported_at"
)  # fmt: skip
#: A batch's key (its row's primary key), and the columns of its row, as claimed.
BATCH_KEY = ("trial_id", "run_id", "sender", "seq")
BATCH_COLUMNS = (*BATCH_KEY, "stored_at")


def _check_columns(table: Table, expected: tuple[str, ...]) -> None:
    """The hot path's column list must be the table's (a model change must change both)."""
    actual = tuple(c.name for c in table.columns if c.name != "id")  # id: the database's
    if set(actual) != set(expected):
        raise RuntimeError(f"{table.name} has columns {actual}; the metric writes use {expected}")


_Key = tuple[int, int, str, int]


def _key(batch: MetricBatch) -> _Key:
    return (batch.trial_id, batch.run_id, batch.sender, batch.seq)


def _from_current_run(d: MetricDelivery, current: dict[int, tuple[int, str]]) -> bool:
    """Whether ``d`` may be stored: it names no run, or its trial's current one, not ended."""
    if d.run_id is None:
        return True
    run, state = current.get(d.trial_id, (None, ""))
    return run == d.run_id and state not in _TERMINAL


def _metric_rows(reports: Sequence[NewMetric], now: float) -> list[tuple[Any, ...]]:
    """Each report's row, its values in METRIC_COLUMNS order."""
    return [
        (
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
        for r in reports
    ]


class _BulkStatements(abc.ABC):
    """The hot path's statements (each database's own kind below), built once from the tables."""

    def __init__(self, engine: Engine) -> None:
        metrics, batches = cast(Table, MetricRow.__table__), cast(Table, MetricBatchRow.__table__)
        _check_columns(metrics, METRIC_COLUMNS)
        _check_columns(batches, BATCH_COLUMNS)
        self._quote = engine.dialect.identifier_preparer.quote
        self._dialect = engine.dialect
        self.metrics, self.batches = metrics, batches
        self.trials = self._quote(TrialRow.__tablename__)

    def names(self, columns: tuple[str, ...], prefix: str = "") -> str:
        return ", ".join(prefix + self._quote(c) for c in columns)

    def insert_into(self, table: Table, columns: tuple[str, ...]) -> str:
        return f"INSERT INTO {self._quote(table.name)} ({self.names(columns)})"

    @abc.abstractmethod
    def current_runs(self, cursor: Any, ids: list[int]) -> list[tuple[Any, ...]]:
        """(id, run_id, state) of the trials ``ids``."""

    @abc.abstractmethod
    def claim(self, cursor: Any, keys: list[tuple[Any, ...]]) -> set[_Key]:
        """Insert the batch keys (BATCH_COLUMNS order); those that were new."""

    @abc.abstractmethod
    def insert_metrics(self, cursor: Any, rows: list[tuple[Any, ...]]) -> None:
        """Insert the metric rows (METRIC_COLUMNS order)."""


class _SqliteStatements(_BulkStatements):
    """SQLite's: multi-row ``VALUES``, and queries that answer in one row.

    sqlite3 releases the GIL around every step of a statement, one per row inserted by
    ``executemany`` and one per row fetched, and a thread taking the GIL back from a busy event
    loop waits up to Python's switch interval each time (bench/README.md: sqlite-statements)."""

    #: Rows one statement takes (7 parameters each; SQLite allows 32,766 per statement).
    ROWS_PER_INSERT = 1000

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._insert_metrics = self.insert_into(self.metrics, METRIC_COLUMNS) + " VALUES {values}"
        self._insert_keys = self.insert_into(self.batches, BATCH_COLUMNS) + " VALUES {values}"
        on = " AND ".join(f"b.{self._quote(c)} = k.{self._quote(c)}" for c in BATCH_KEY)
        self._stored_keys = (
            f"WITH k ({self.names(BATCH_KEY)}) AS (VALUES {{values}}) "
            f"SELECT json_group_array(json_array({self.names(BATCH_KEY, 'b.')})) "
            f"FROM k JOIN {self._quote(self.batches.name)} AS b ON {on}"
        )
        self._current_runs = (
            f"SELECT json_group_array(json_array(id, run_id, state)) FROM {self.trials} "
            "WHERE id IN ({marks})"
        )

    def current_runs(self, cursor: Any, ids: list[int]) -> list[tuple[Any, ...]]:
        cursor.execute(self._current_runs.format(marks=", ".join("?" * len(ids))), ids)
        return cast(list[tuple[Any, ...]], json.loads(cursor.fetchone()[0]))

    def claim(self, cursor: Any, keys: list[tuple[Any, ...]]) -> set[_Key]:
        """The keys not stored before are inserted, once each (a key twice in one group is
        new once). A plain INSERT: should another writer have stored one meanwhile, the
        primary key fails the transaction rather than storing its rows twice."""
        first = {k[: len(BATCH_KEY)]: k for k in keys}  # each key once, in order
        stored: set[_Key] = set()
        for chunk in self._chunks(list(first)):
            cursor.execute(self._stored_keys.format(values=self._marks(chunk)), _flat(chunk))
            stored.update((t, r, s, q) for t, r, s, q in json.loads(cursor.fetchone()[0]))
        new = [k for key, k in first.items() if key not in stored]
        for chunk in self._chunks(new):
            cursor.execute(self._insert_keys.format(values=self._marks(chunk)), _flat(chunk))
        return first.keys() - stored

    def insert_metrics(self, cursor: Any, rows: list[tuple[Any, ...]]) -> None:
        for chunk in self._chunks(rows):
            cursor.execute(self._insert_metrics.format(values=self._marks(chunk)), _flat(chunk))

    def _chunks(self, rows: list[Any]) -> list[list[Any]]:
        step = self.ROWS_PER_INSERT
        return [rows[i : i + step] for i in range(0, len(rows), step)]

    @staticmethod
    def _marks(rows: list[tuple[Any, ...]]) -> str:
        """``(?, ?), (?, ?)``: a row's worth of parameter marks per row."""
        one = "(" + ", ".join("?" * len(rows[0])) + ")"
        return ", ".join([one] * len(rows))


class _PostgresStatements(_BulkStatements):
    """PostgreSQL's: ``COPY`` for the rows, arrays for the keys and ids. psycopg parses a
    statement's text in Python and caches the result only for short ones, so a multi-row
    ``VALUES`` cost the writer more CPU than the rows were worth (bench/README.md:
    postgres-copy). Every statement here has the same text whatever the group's size."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._copy_metrics = (
            f"COPY {self._quote(self.metrics.name)} ({self.names(METRIC_COLUMNS)}) FROM STDIN"
        )
        arrays = ", ".join(f"%s::{self._sql_type(c)}[]" for c in BATCH_COLUMNS)
        # A key stored before inserts nothing and is not returned; a concurrent insert of the
        # same key waits for the other transaction, then does nothing.
        self._claim = (
            self.insert_into(self.batches, BATCH_COLUMNS)
            + f" SELECT * FROM unnest({arrays})"
            + f" ON CONFLICT DO NOTHING RETURNING {self.names(BATCH_KEY)}"
        )
        self._current_runs = f"SELECT id, run_id, state FROM {self.trials} WHERE id = ANY(%s)"

    def _sql_type(self, column: str) -> str:
        return str(self.batches.columns[column].type.compile(dialect=self._dialect))

    def current_runs(self, cursor: Any, ids: list[int]) -> list[tuple[Any, ...]]:
        cursor.execute(self._current_runs, (ids,))
        return cast(list[tuple[Any, ...]], cursor.fetchall())

    def claim(self, cursor: Any, keys: list[tuple[Any, ...]]) -> set[_Key]:
        cursor.execute(self._claim, [list(column) for column in zip(*keys, strict=True)])
        return {(int(t), int(r), str(s), int(q)) for t, r, s, q in cursor.fetchall()}

    def insert_metrics(self, cursor: Any, rows: list[tuple[Any, ...]]) -> None:
        with cursor.copy(self._copy_metrics) as copy:
            for row in rows:
                copy.write_row(row)


def _flat(rows: list[tuple[Any, ...]]) -> list[Any]:
    return [v for row in rows for v in row]


class MetricWrites:
    """Metric reports in, at most once per batch."""

    _engine: Engine
    _session: Callable[[], contextlib.AbstractContextManager[Session]]

    def _prepare_metric_writes(self) -> None:
        """Build the driver-level statements once: the hot path skips SQLAlchemy's per-row bind
        processing, several times cheaper per row."""
        postgres = self._engine.dialect.name == "postgresql"
        self._bulk = (_PostgresStatements if postgres else _SqliteStatements)(self._engine)

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
        dbapi = self._engine.dialect.loaded_dbapi
        committing = False
        try:
            with self._engine.begin() as conn:
                mark_written(conn)
                # The driver's own cursor: a statement through SQLAlchemy costs far more, and
                # this runs for every batch of every trial (bench/README.md: driver-cursor).
                cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
                try:
                    outcomes = self._deliver(cursor, deliveries, now)
                finally:
                    cursor.close()
                committing = True
            return outcomes
        except (SQLAlchemyError, dbapi.Error) as e:
            # A failed commit is in doubt only for reports without a batch key: a batch with
            # one may be written again, it is stored once.
            in_doubt = committing and any(d.batch is None for d in deliveries)
            raise store_error(e, dbapi, in_doubt=in_doubt) from e

    def _deliver(
        self, cursor: Any, deliveries: Sequence[MetricDelivery], now: float
    ) -> list[Delivered]:
        current = self._current_runs(cursor, deliveries)
        live = [_from_current_run(d, current) for d in deliveries]
        keys = [
            (*_key(d.batch), now)
            for d, ok in zip(deliveries, live, strict=True)
            if ok and d.batch is not None
        ]
        claimed = self._bulk.claim(cursor, keys) if keys else set()
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
                rows += _metric_rows(d.reports, now)
        if rows:
            self._bulk.insert_metrics(cursor, rows)
        return outcomes

    def _current_runs(
        self, cursor: Any, deliveries: Sequence[MetricDelivery]
    ) -> dict[int, tuple[int, str]]:
        """(run id, state) of each trial whose deliveries must come from its current run."""
        ids = sorted({d.trial_id for d in deliveries if d.run_id is not None})
        if not ids:
            return {}
        rows = self._bulk.current_runs(cursor, ids)
        return {int(i): (int(run or 0), str(state)) for i, run, state in rows}

    def metric_batch_stored(self, batch: MetricBatch) -> bool:
        """Whether ``batch`` was stored already."""
        with self._session() as s:
            return s.get(MetricBatchRow, _key(batch)) is not None

    @repeatable
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
