"""What the master's REST API answers: one dataclass per response body.

Plain dataclasses, so the client (the CLI, a trial) reads them without importing pydantic;
the app declares them as ``response_model`` and FastAPI validates them and publishes their
schemas in /openapi.json. Free-form user data (config, hparams, metric values, metadata) stays
``dict[str, Any]``; everything the platform itself defines is a typed field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._states import ExperimentState, TrialState


@dataclass(frozen=True)
class Health:
    status: str


@dataclass(frozen=True)
class Ok:
    """A command that has nothing to return but that it was done."""

    status: str = "ok"


@dataclass(frozen=True)
class PoolInfo:
    """A resource pool of the master: its slots now and, for a Ray pool, its cluster's
    address and alive nodes (slots and nodes None while the cluster does not answer)."""

    name: str
    type: str  # local or ray
    slot_type: str  # cpu or gpu
    slots: int | None
    address: str | None = None
    nodes: int | None = None


@dataclass(frozen=True)
class MasterInfo:
    version: str
    slots: int
    gpus: bool
    home: str
    python: str
    pid: int
    uptime_seconds: float
    running_trials: list[int]
    idle_timeout_seconds: float
    pools: list[PoolInfo] = field(default_factory=list)


# Experiments -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExperimentRecord:
    """An experiment as the store keeps it (the store's ``Experiment``)."""

    id: int
    name: str
    description: str | None
    labels: list[str]
    config: dict[str, Any]
    state: ExperimentState
    archived: bool
    unmanaged: bool
    progress: float
    error: str | None
    created_at: float
    ended_at: float | None


@dataclass(frozen=True)
class ExperimentOut(ExperimentRecord):
    """An experiment as the API shows it: the stored record and what the master derives."""

    #: The interpreter the trials run with (None: the master's, for older experiments).
    python: str | None
    #: How many of its trials are in each state (``{"COMPLETED": 3, "ACTIVE": 1}``, keyed by
    #: ``TrialState`` values); filled in
    #: by the experiment list only.
    trial_states: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CreatedExperiment:
    experiment: ExperimentOut
    warnings: list[str]


@dataclass(frozen=True)
class ExperimentReply:
    experiment: ExperimentOut


@dataclass(frozen=True)
class ExperimentList:
    experiments: list[ExperimentOut]


@dataclass(frozen=True)
class MetricOut:
    trial_id: int
    run_id: int
    group: str
    steps_completed: int
    values: dict[str, Any]
    reported_at: float


@dataclass(frozen=True)
class TrialRecord:
    """A trial as the store keeps it: its row's columns, the searcher's facts among them (the
    store's ``Trial``, which also reads those facts as one ``SearcherFacts``)."""

    id: int
    experiment_id: int
    request_id: str
    hparams: dict[str, Any]
    seed: int
    state: TrialState
    restarts: int
    run_id: int
    op_length: int | None
    op_complete: bool
    closed: bool
    stop_requested: bool
    acked_run_id: int | None
    early_exit: str | None
    progress: float | None
    status: str | None
    error: str | None
    pid: int | None
    pid_started: float | None
    log_offset: int
    slots: list[int]
    created_at: float
    ended_at: float | None


@dataclass(frozen=True)
class TrialOut(TrialRecord):
    """A trial with its latest metrics, best searcher-metric value and latest checkpoint."""

    latest_training: MetricOut | None
    latest_validation: MetricOut | None
    best_validation: float | None
    latest_checkpoint: str | None


@dataclass(frozen=True)
class CheckpointOut:
    uuid: str
    trial_id: int
    experiment_id: int
    run_id: int
    steps_completed: int
    metadata: dict[str, Any]
    resources: dict[str, int]
    storage: dict[str, Any]
    state: str
    reported_at: float


@dataclass(frozen=True)
class BestTrial:
    """The trial with the best value of the searcher's metric."""

    trial_id: int
    metric: str
    value: float
    hparams: dict[str, Any]
    #: The trial's latest checkpoint (the one describe's text shows beside it), if any.
    checkpoint: str | None = None


@dataclass(frozen=True)
class SearcherSummary:
    name: str | None
    metric: str | None
    smaller_is_better: bool
    generation: str
    max_trials: int | None
    progress: float
    trials: int
    trial_states: dict[str, int]


@dataclass(frozen=True)
class ExperimentSummary:
    """What ``--follow`` polls: the experiment, its trials, its best trial and its search."""

    experiment: ExperimentOut
    trials: list[TrialOut]
    best_trial: BestTrial | None
    searcher: SearcherSummary


@dataclass(frozen=True)
class ExperimentDescription:
    """``experiment describe``: the summary and every checkpoint of the experiment."""

    experiment: ExperimentOut
    trials: list[TrialOut]
    checkpoints: list[CheckpointOut]
    best_trial: BestTrial | None
    searcher: SearcherSummary


@dataclass(frozen=True)
class CheckpointList:
    checkpoints: list[CheckpointOut]


@dataclass(frozen=True)
class BestValidation:
    value: float | None


@dataclass(frozen=True)
class SearcherEvents:
    events: list[dict[str, Any]]
    experiment_state: str
    #: Per trial request id, how far it trained (0..1).
    trial_progress: dict[str, float]


@dataclass(frozen=True)
class OperationsApplied:
    applied: bool


# Trials ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrialDescription:
    trial: TrialOut
    checkpoints: list[CheckpointOut]
    validation_metrics: list[MetricOut]


@dataclass(frozen=True)
class TrialList:
    trials: list[TrialOut]


@dataclass(frozen=True)
class LogLineOut:
    id: int
    trial_id: int
    run_id: int
    line: str
    ts: float


@dataclass(frozen=True)
class TrialLogs:
    logs: list[LogLineOut]
    trial_state: TrialState
    running: bool
    #: The page stopped short of the end of the log (its line or size limit): ask again after
    #: its last line.
    more: bool = False


@dataclass(frozen=True)
class MetricList:
    metrics: list[MetricOut]


@dataclass(frozen=True)
class BatchMetricsOut:
    """The per-batch metrics a training report carried (``report_training_metrics``'s
    ``batch_metrics``), with the report they belong to."""

    run_id: int
    steps_completed: int
    reported_at: float
    batch_metrics: list[dict[str, Any]]


@dataclass(frozen=True)
class BatchMetricsList:
    reports: list[BatchMetricsOut]


@dataclass(frozen=True)
class MetricsStored:
    stored: int
    #: True when this batch was stored before (a resend after a lost reply): nothing was added.
    duplicate: bool = False
    #: Per validation report of the batch, in order: whether its searcher metric beat every
    #: validation of the experiment before it (Determined's checkpoint policy ``best``). None
    #: when the batch held no validation, or was a duplicate.
    is_best_validation: list[bool] | None = None


@dataclass(frozen=True)
class CheckpointReply:
    checkpoint: CheckpointOut


@dataclass(frozen=True)
class Preemption:
    preempt: bool


@dataclass(frozen=True)
class SearcherOperation:
    length: int | None
    completed: bool


@dataclass(frozen=True)
class LastValidation:
    steps_completed: int | None


@dataclass(frozen=True)
class UuidList:
    uuids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ModelDef:
    """An experiment's stored model directory: a gzipped tar archive, base64-encoded
    (Determined's ``b64Tgz``); empty when it was created without one."""

    b64_tgz: str


# Checkpoint GC and deletion --------------------------------------------------------------------


@dataclass(frozen=True)
class CheckpointsDeleted:
    """What a GC run or a delete removed: the checkpoints whose files it deleted and the bytes
    those took in storage; ``missing``: records marked deleted that had no files in storage."""

    deleted: list[str]
    bytes_freed: int
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ExperimentDeleted:
    experiment_id: int
    checkpoints_deleted: int
    bytes_freed: int
    #: Checkpoint records that had no files in storage (not counted in checkpoints_deleted).
    checkpoints_missing: int = 0


@dataclass(frozen=True)
class RankedCheckpoint:
    checkpoint: CheckpointOut
    #: The searcher metric of the validation at the checkpoint's steps (None: none there).
    searcher_metric: float | None


@dataclass(frozen=True)
class BestCheckpoints:
    metric: str | None
    smaller_is_better: bool
    checkpoints: list[RankedCheckpoint]


# Web UI ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoginCode:
    """A single-use code the browser trades at ``login_path`` for a session cookie."""

    code: str
    expires_in_seconds: float
    login_path: str


@dataclass(frozen=True)
class MetricSeries:
    """One trial's values of one metric, step by step (None where a report lacked it)."""

    trial_id: int
    steps: list[int]
    values: list[float | None]


@dataclass(frozen=True)
class ExperimentMetrics:
    """One metric of every trial of an experiment; ``last_id``: ask ``after_id`` it next."""

    group: str
    metric: str
    series: list[MetricSeries]
    last_id: int


@dataclass(frozen=True)
class RungTrial:
    """A trial's result at a rung: its searcher metric (None: it exited early) and what the
    search did with it: promoted, stopped, waiting (for a promotion), completed or exited."""

    trial_id: int | None
    value: float | None
    status: str


@dataclass(frozen=True)
class RungOut:
    """One rung: the length it trains to, its results best first, trials training to it."""

    index: int
    length: int
    trials: list[RungTrial]
    training: list[int]


@dataclass(frozen=True)
class BracketOut:
    """One ASHA bracket (adaptive_asha runs several)."""

    index: int
    max_trials: int
    rungs: list[RungOut]


@dataclass(frozen=True)
class ExperimentRungs:
    """An ASHA search's rungs as its searcher holds them; ``brackets`` empty for a search
    that is not ASHA. ``unit``: what a rung's length counts (batches, a time metric...)."""

    experiment_id: int
    searcher: str | None
    metric: str | None
    unit: str | None
    brackets: list[BracketOut]


@dataclass(frozen=True)
class ExperimentEvent:
    """What ``/events`` streams (server-sent events, one JSON ``data`` line each): the
    experiment's state and, per trial, its state and newest metric row."""

    experiment_id: int
    state: str
    progress: float
    last_metric_id: int
    trials: dict[str, str]


@dataclass(frozen=True)
class ExperimentsEvent:
    """What ``/events/experiments`` streams (one JSON ``data`` line each time it changes): per
    experiment (archived ones too), its state, progress and archived flag; and the store's
    newest metric row, so a list showing best metrics knows when to look again."""

    states: dict[str, str]
    progress: dict[str, float]
    archived: list[int]
    last_metric_id: int


@dataclass(frozen=True)
class TensorboardOut:
    """A TensorBoard that ``trialkit tensorboard`` serves, and what over."""

    url: str
    experiment_ids: list[int]
    trial_id: int | None


@dataclass(frozen=True)
class TensorboardList:
    tensorboards: list[TensorboardOut]
