"""Domain objects the store returns (never ORM rows), and the state vocabularies."""

from __future__ import annotations

import dataclasses
import enum
import functools
from dataclasses import dataclass
from typing import Any

# Experiments (the API adds two derived fields), trials (the API adds their latest metrics and
# checkpoint), checkpoints, metrics, log lines and per-batch metrics are stored and served in one
# shape, and the states are the ones the API reports: the store returns the REST contract's types
# for them (``trialkit.rest`` is a leaf package of plain dataclasses and enums).
from .. import rest
from ..rest import ExperimentState, TrialState

Experiment = rest.ExperimentRecord
Checkpoint = rest.CheckpointOut
Metric = rest.MetricOut
LogLine = rest.LogLineOut
BatchMetrics = rest.BatchMetricsOut

TERMINAL_EXPERIMENT_STATES = frozenset(s for s in ExperimentState if s.ended)
TERMINAL_TRIAL_STATES = frozenset(s for s in TrialState if s.ended)


@dataclass(frozen=True)
class SearcherFacts:
    """What the search protocol recorded about a trial, beside its lifecycle state (see
    ``trialkit.master.engine._lifecycle``): the 0.37 operation it trains to and whether it reported
    it, the searcher's Close and Stop, the run that acknowledged it exits to be resumed, and
    the early exit it reported. Stored as columns of the trial row of the same names."""

    op_length: int | None = None
    op_complete: bool = False
    closed: bool = False
    stop_requested: bool = False
    acked_run_id: int | None = None
    early_exit: str | None = None


@dataclass(frozen=True)
class Trial(rest.TrialRecord):
    """A trial as the store keeps it (the REST contract's record, flat as its row), with the
    searcher's facts read together as one value."""

    @functools.cached_property
    def searcher(self) -> SearcherFacts:
        """The record's fields that the search protocol writes, as one value (built once per
        trial record: the engine reads it for every trial at each tick)."""
        facts = dataclasses.fields(SearcherFacts)
        return SearcherFacts(**{f.name: getattr(self, f.name) for f in facts})


@dataclass(frozen=True)
class MetricBatch:
    """Which delivery a batch of metrics is: ``seq`` of the shipper ``sender`` in a trial's run."""

    trial_id: int
    run_id: int
    sender: str
    seq: int


@dataclass(slots=True)
class NewMetric:
    """One report from a trial, as the trial shipped it. (Not frozen: the master builds one
    per report on its event loop, and a frozen dataclass's __init__ took 1.8 us, 0.3 us now.)"""

    trial_id: int
    group: str
    steps_completed: int
    values: dict[str, Any]
    run_id: int = 0
    batch_metrics: list[dict[str, Any]] | None = None
    reported_at: float = 0.0
    #: ``values`` / ``batch_metrics`` already encoded as strict JSON (the master's request
    #: validation encodes them once): stored as given instead of being encoded again.
    values_json: str | None = None
    batch_metrics_json: str | None = None


class Delivered(str, enum.Enum):
    """What became of a ``MetricDelivery``."""

    STORED = "STORED"
    DUPLICATE = "DUPLICATE"  # its batch was stored before: a resend after a lost reply
    STALE = "STALE"  # not the trial's current run, or the trial ended: nothing stored


@dataclass(frozen=True)
class MetricDelivery:
    """One trial's batch of reports to store: with ``batch``, at most once; with ``run_id``, only
    while that is the trial's current run and the trial has not ended."""

    reports: list[NewMetric]
    batch: MetricBatch | None = None
    trial_id: int = 0
    run_id: int | None = None


@dataclass(frozen=True)
class TrialView:
    """A trial with what describe shows of it, read in a fixed number of statements
    (``Store.trial_views``): its latest training and validation reports, the best value of the
    searcher metric over its validations, and its latest completed checkpoint."""

    trial: Trial
    latest_training: Metric | None
    latest_validation: Metric | None
    best_validation: float | None
    latest_checkpoint: str | None
