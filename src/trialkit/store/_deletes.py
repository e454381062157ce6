"""Store queries for checkpoint GC and experiment deletion (a mixin of ``Store``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ._models import (
    CheckpointRow,
    ExperimentRow,
    LogRow,
    MetricBatchRow,
    MetricRow,
    TrialRow,
)


@dataclass(frozen=True)
class ValidationRecord:
    """A validation report with its row id (ids order reports; GC breaks ties by them)."""

    id: int
    trial_id: int
    steps_completed: int
    values: dict[str, Any]


class DeleteQueries:
    """What GC and ``experiment delete`` ask of the store."""

    _session: Callable[[], contextlib.AbstractContextManager[Session]]

    def experiment_validations(self, experiment_id: int) -> list[ValidationRecord]:
        """Every validation report of the experiment's trials, oldest first."""
        trial_ids = select(TrialRow.id).where(TrialRow.experiment_id == experiment_id)
        q = (
            select(MetricRow.id, MetricRow.trial_id, MetricRow.steps_completed, MetricRow.values)
            .where(MetricRow.trial_id.in_(trial_ids), MetricRow.group == "validation")
            .order_by(MetricRow.id)
        )
        with self._session() as s:
            return [
                ValidationRecord(r.id, r.trial_id, r.steps_completed, r.values)
                for r in s.execute(q)
            ]

    def delete_experiment_rows(self, experiment_id: int) -> None:
        """Remove the experiment and everything of its trials, in one transaction."""
        trial_ids = select(TrialRow.id).where(TrialRow.experiment_id == experiment_id)
        with self._session() as s:
            for model in (LogRow, MetricRow, MetricBatchRow, CheckpointRow):
                s.execute(delete(model).where(model.trial_id.in_(trial_ids)))
            s.execute(delete(CheckpointRow).where(CheckpointRow.experiment_id == experiment_id))
            s.execute(delete(TrialRow).where(TrialRow.experiment_id == experiment_id))
            s.execute(delete(ExperimentRow).where(ExperimentRow.id == experiment_id))
