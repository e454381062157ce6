"""What the web UI's charts read: one metric of every trial of an experiment, as compact rows,
and the newest metric row's id (what its event stream compares)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from ._models import MetricRow
from ._queries import experiment_trial_ids, metric_number


class ChartQueries:
    """Mixed into Store: read-only queries for charts, each one statement."""

    _session: Callable[[], contextlib.AbstractContextManager[Session]]
    _engine: Engine

    def metric_points(
        self, experiment_id: int, group: str, metric: str, after_id: int = 0
    ) -> list[tuple[int, int, int, float | None]]:
        """One metric of an experiment's reports in ``group`` after row ``after_id``, as
        (id, trial id, steps completed, value) rows in id order: the web UI's chart data, read
        in one statement with the number taken out of the JSON by the database."""
        with self._session() as s:
            value = metric_number(self._engine.dialect.name, metric)
            q = (
                select(MetricRow.id, MetricRow.trial_id, MetricRow.steps_completed, value)
                .where(
                    MetricRow.trial_id.in_(experiment_trial_ids(experiment_id)),
                    MetricRow.group == group,
                    MetricRow.id > after_id,
                )
                .order_by(MetricRow.id)
            )
            return [(r[0], r[1], r[2], r[3]) for r in s.execute(q)]

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
