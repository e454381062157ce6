"""Read-model queries: what describe needs of many trials, each in one SQL statement whatever
the number of trials (window functions; SQLite >= 3.25 and PostgreSQL)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Float, case, cast, func, literal, null, or_, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from ._models import CheckpointRow, MetricRow, TrialRow

#: The groups whose latest report describe shows.
LATEST_GROUPS = ("training", "validation")


def metric_number(dialect: str, metric: str) -> ColumnElement[Any]:
    """``values[metric]`` as a float where it is a JSON number, else NULL (strings such as
    "NaN", booleans, objects and missing keys are not values a search can compare)."""
    if dialect == "sqlite" and '"' in metric:
        return sqlite_member_number(metric)
    value = MetricRow.values[metric]
    is_number: ColumnElement[bool]
    if dialect == "sqlite":
        kind = func.json_type(MetricRow.values, literal(sqlite_path(metric)))
        is_number = kind.in_(("integer", "real"))
    else:  # PostgreSQL: the column is json
        is_number = func.json_typeof(value) == "number"
    return case((is_number, value.as_float()), else_=None).cast(Float)


def sqlite_path(key: str) -> str:
    """A JSON path naming one object key, quoted as SQLite's JSON1 reads it. A key holding
    ``"`` has no such path (SQLite reads no escapes in a quoted key): see sqlite_member_number."""
    return '$."' + key + '"'


def sqlite_member_number(metric: str) -> ColumnElement[Any]:
    """``values[metric]`` as a REAL where it is a JSON number, else NULL, for any key: looked up
    among the object's members (json_each), slower than a path but the only way for a name that
    holds ``"``."""
    members = func.json_each(MetricRow.values).table_valued("key", "value", "type")
    number = (
        select(members.c.value)
        .where(members.c.key == metric, members.c.type.in_(("integer", "real")))
        .scalar_subquery()
    )
    return number.cast(Float)


def latest_and_best(
    session: Session,
    trial_ids: Any,
    metric: str | None,
    smaller_is_better: bool,
) -> list[Any]:
    """Per trial in ``trial_ids`` (a list or a subquery), its latest training and latest
    validation rows, each with the trial's best ``metric`` over its validations (``best``):
    one statement."""
    dialect = session.get_bind().dialect.name
    if metric:
        pick = func.min if smaller_is_better else func.max
        validation_value = case(
            (MetricRow.group == "validation", metric_number(dialect, metric)), else_=None
        )
        best: ColumnElement[Any] = pick(validation_value)
    else:
        best = cast(null(), Float)
    # One grouped pass: per trial, its newest row id of each group and its best value (window
    # functions ranking every row were slower: bench/README.md, views-window).
    newest = (
        select(
            func.max(case((MetricRow.group == "training", MetricRow.id))).label("training"),
            func.max(case((MetricRow.group == "validation", MetricRow.id))).label("validation"),
            best.label("best"),
        )
        .where(MetricRow.trial_id.in_(trial_ids), MetricRow.group.in_(LATEST_GROUPS))
        .group_by(MetricRow.trial_id)
        .subquery()
    )
    q = select(
        MetricRow.trial_id,
        MetricRow.run_id,
        MetricRow.group,
        MetricRow.steps_completed,
        MetricRow.values,
        MetricRow.reported_at,
        newest.c.best,
    ).join(newest, or_(MetricRow.id == newest.c.training, MetricRow.id == newest.c.validation))
    return list(session.execute(q))


def latest_checkpoints(session: Session, trial_ids: Any) -> dict[int, str]:
    """Per trial, its completed checkpoint with the most steps (ties: the latest reported)."""
    rank = func.row_number().over(
        partition_by=CheckpointRow.trial_id,
        order_by=(CheckpointRow.steps_completed.desc(), CheckpointRow.reported_at.desc()),
    )
    ranked = (
        select(CheckpointRow.trial_id, CheckpointRow.uuid, rank.label("rank"))
        .where(CheckpointRow.trial_id.in_(trial_ids), CheckpointRow.state == "COMPLETED")
        .subquery()
    )
    rows = session.execute(select(ranked.c.trial_id, ranked.c.uuid).where(ranked.c.rank == 1))
    return {int(r.trial_id): str(r.uuid) for r in rows}


def experiment_trial_ids(experiment_id: int) -> Any:
    """The ids of an experiment's trials, as a subquery."""
    return select(TrialRow.id).where(TrialRow.experiment_id == experiment_id)
