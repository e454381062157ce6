"""Store queries for checkpoint GC and experiment deletion (a mixin of ``Store``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from ._models import (
    CheckpointRow,
    ExperimentRow,
    LogRow,
    MetricBatchRow,
    MetricRow,
    StorageSecretRow,
    TrialRow,
)

#: Uuids per ``IN (...)`` clause: SQLite builds before 3.32 allow 999 bound parameters.
_IN_CHUNK = 500


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

    def set_checkpoints_state(self, uuids: Sequence[str], state: str) -> None:
        """Set the state of every named checkpoint, in one transaction (GC marks the rows of a
        whole run DELETED at once, before any of their files go)."""
        ids = list(dict.fromkeys(uuids))
        with self._session() as s:
            for start in range(0, len(ids), _IN_CHUNK):
                chunk = ids[start : start + _IN_CHUNK]
                s.execute(
                    update(CheckpointRow).where(CheckpointRow.uuid.in_(chunk)).values(state=state)
                )

    def delete_experiment_rows(self, experiment_id: int) -> None:
        """Remove the experiment, its storage credentials and everything of its trials, in one
        transaction."""
        trial_ids = select(TrialRow.id).where(TrialRow.experiment_id == experiment_id)
        with self._session() as s:
            for model in (LogRow, MetricRow, MetricBatchRow, CheckpointRow):
                s.execute(delete(model).where(model.trial_id.in_(trial_ids)))
            s.execute(delete(CheckpointRow).where(CheckpointRow.experiment_id == experiment_id))
            s.execute(delete(TrialRow).where(TrialRow.experiment_id == experiment_id))
            s.execute(
                delete(StorageSecretRow).where(StorageSecretRow.experiment_id == experiment_id)
            )
            s.execute(delete(ExperimentRow).where(ExperimentRow.id == experiment_id))
