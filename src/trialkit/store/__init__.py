"""Persistent state: experiments, trials, metrics, checkpoints, logs (SQLite or PostgreSQL)."""

from ._charts import TrialPoints
from ._connection import sqlite_url
from ._deletes import ValidationRecord
from ._errors import NotFound, StoreError, StoreFull, StoreUnavailable
from ._store import Store
from ._types import (
    TERMINAL_EXPERIMENT_STATES,
    TERMINAL_TRIAL_STATES,
    BatchMetrics,
    Checkpoint,
    Delivered,
    Experiment,
    ExperimentState,
    LogLine,
    Metric,
    MetricBatch,
    MetricDelivery,
    NewMetric,
    SearcherFacts,
    Trial,
    TrialState,
    TrialView,
)

__all__ = [
    "TrialPoints",
    "TERMINAL_EXPERIMENT_STATES",
    "TERMINAL_TRIAL_STATES",
    "BatchMetrics",
    "Checkpoint",
    "Delivered",
    "Experiment",
    "ExperimentState",
    "LogLine",
    "Metric",
    "MetricBatch",
    "MetricDelivery",
    "NewMetric",
    "NotFound",
    "SearcherFacts",
    "Store",
    "StoreError",
    "StoreFull",
    "StoreUnavailable",
    "Trial",
    "TrialState",
    "TrialView",
    "ValidationRecord",
    "sqlite_url",
]
