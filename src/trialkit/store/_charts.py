"""What the web UI's charts read: one metric of every trial of an experiment, one row per trial
with its points aggregated by the database, and the newest metric row's id (what the event
streams compare)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, Text, cast, func, literal, select
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from ._models import MetricRow
from ._queries import experiment_trial_ids, sqlite_member_number, sqlite_path

_NUMBERS = (int, float)


@dataclass(frozen=True)
class TrialPoints:
    """One trial's points of one metric, in report order: ``values[i]`` is None where that
    report's value is not a JSON number. ``last_id``: its newest metric row read."""

    trial_id: int
    steps: list[int]
    values: list[float | None]
    last_id: int


class ChartQueries:
    """Mixed into Store: read-only queries for charts, each one statement."""

    _session: Callable[[], contextlib.AbstractContextManager[Session]]
    _engine: Engine

    def metric_points(
        self, experiment_id: int, group: str, metric: str, after_id: int = 0
    ) -> list[TrialPoints]:
        """One metric of an experiment's reports in ``group`` after row ``after_id``, per trial
        in trial order. The database extracts the number from each report's JSON and joins a
        trial's points into one text (the number as stored, digit for digit), so 200,000
        points come back as 200 rows instead of 200,000."""
        dialect = self._engine.dialect.name
        ids, steps, values = (
            _joined(dialect, cast(MetricRow.id, String)),
            _joined(dialect, cast(MetricRow.steps_completed, String)),
            _joined(dialect, func.coalesce(_value_text(dialect, metric), "null")),
        )
        q = (
            select(MetricRow.trial_id, ids, steps, values)
            .where(
                MetricRow.trial_id.in_(experiment_trial_ids(experiment_id)),
                MetricRow.group == group,
                MetricRow.id > after_id,
            )
            .group_by(MetricRow.trial_id)
            .order_by(MetricRow.trial_id)
        )
        with self._session() as s:
            return [_trial_points(*row) for row in s.execute(q)]

    def last_metric_id(self, experiment_id: int) -> int:
        """The id of the experiment's newest metric row (0: none yet)."""
        with self._session() as s:
            q = select(func.max(MetricRow.id)).where(
                MetricRow.trial_id.in_(experiment_trial_ids(experiment_id))
            )
            return int(s.scalar(q) or 0)

    def newest_metric_id(self) -> int:
        """The id of the store's newest metric row (0: none yet)."""
        with self._session() as s:
            return int(s.scalar(select(func.max(MetricRow.id))) or 0)


def _value_text(dialect: str, metric: str) -> ColumnElement[Any]:
    """``values[metric]``'s JSON text as stored (NULL where missing); what is not a number is
    dropped in Python, cheaper than asking the database for each value's JSON type."""
    if dialect == "sqlite" and '"' in metric:
        # No path can name such a key: its number as SQLite prints a REAL (15 digits).
        return cast(sqlite_member_number(metric), String)
    if dialect == "sqlite":
        # ->: the JSON text as stored; json_extract would round a REAL to 15 digits.
        path = literal(sqlite_path(metric))
        return MetricRow.values.op("->", return_type=String)(path)
    return cast(MetricRow.values[metric], Text)  # PostgreSQL json keeps its text as written


def _joined(dialect: str, text: ColumnElement[Any]) -> Any:
    """The aggregate joining a group's ``text`` with commas. PostgreSQL orders it by row id;
    SQLite (before 3.44) cannot be told, so the ids come along and are checked."""
    if dialect == "sqlite":
        return func.group_concat(text, ",")
    return func.string_agg(text, aggregate_order_by(literal(","), MetricRow.id))


def _trial_points(trial_id: int, ids: str, steps: str, values: str) -> TrialPoints:
    """A trial's row of joined texts as lists, sorted by row id if the database did not."""
    id_list: list[int] = json.loads(f"[{ids}]")
    step_list: list[int] = json.loads(f"[{steps}]")
    value_list: list[Any] = json.loads(f"[{values}]")
    if any(a > b for a, b in zip(id_list, id_list[1:], strict=False)):
        order = sorted(range(len(id_list)), key=id_list.__getitem__)
        id_list = [id_list[i] for i in order]
        step_list = [step_list[i] for i in order]
        value_list = [value_list[i] for i in order]
    # Points are JSON numbers (an int becomes a float): strings such as "NaN", booleans and
    # objects are not values a chart or a search can compare.
    floats = [float(v) if type(v) in _NUMBERS else None for v in value_list]
    return TrialPoints(int(trial_id), step_list, floats, id_list[-1])
