"""Rows to the store's domain objects (frozen dataclasses with the rows' field names)."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from ._models import CheckpointRow, ExperimentRow, MetricRow, TrialRow
from ._types import (
    Checkpoint,
    Experiment,
    ExperimentState,
    Metric,
    Trial,
    TrialState,
)

D = TypeVar("D")


def domain(cls: type[D], row: Any, **converted: Any) -> D:
    """Copy a row's columns into the domain dataclass of the same field names."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    return cls(**{n: converted[n] if n in converted else getattr(row, n) for n in names})


def experiment(row: ExperimentRow) -> Experiment:
    return domain(Experiment, row, state=ExperimentState(row.state), labels=list(row.labels or []))


def trial(row: TrialRow) -> Trial:
    return domain(Trial, row, state=TrialState(row.state), slots=list(row.slots or []))


def checkpoint(row: CheckpointRow) -> Checkpoint:
    return domain(Checkpoint, row, metadata=row.meta)


def metric(row: MetricRow) -> Metric:
    return domain(Metric, row)
