"""Every URL of the master's REST API, in one place: the app registers these templates and the
client fills them in (``path(TRIAL_LOGS, trial_id=3)``)."""

from __future__ import annotations

from typing import Any

HEALTH = "/health"
MASTER = "/api/v1/master"
SHUTDOWN = "/api/v1/master/shutdown"

EXPERIMENTS = "/api/v1/experiments"
EXPERIMENT = "/api/v1/experiments/{experiment_id}"
#: The cheaper view ``--follow`` polls: describe without the experiment's checkpoint list.
EXPERIMENT_SUMMARY = "/api/v1/experiments/{experiment_id}/summary"
EXPERIMENT_ACTION = "/api/v1/experiments/{experiment_id}/{action}"
#: The model directory the experiment was created with, as stored (Determined's GetModelDef).
EXPERIMENT_MODEL_DEF = "/api/v1/experiments/{experiment_id}/model_def"
EXPERIMENT_ACTIONS = ("pause", "activate", "kill", "archive", "unarchive")
EXPERIMENT_CHECKPOINTS = "/api/v1/experiments/{experiment_id}/checkpoints"
EXPERIMENT_TRIALS = "/api/v1/experiments/{experiment_id}/trials"
BEST_VALIDATION = "/api/v1/experiments/{experiment_id}/best_validation"
SEARCHER_EVENTS = "/api/v1/experiments/{experiment_id}/searcher/events"
SEARCHER_OPERATIONS = "/api/v1/experiments/{experiment_id}/searcher/operations"

TRIAL = "/api/v1/trials/{trial_id}"
TRIAL_LOGS = "/api/v1/trials/{trial_id}/logs"
TRIAL_METRICS = "/api/v1/trials/{trial_id}/metrics"
#: A WebSocket: metric batches in, one answer per batch out (what the Core API uses).
TRIAL_METRICS_STREAM = "/api/v1/trials/{trial_id}/metrics/stream"
TRIAL_BATCH_METRICS = "/api/v1/trials/{trial_id}/batch_metrics"
TRIAL_CHECKPOINTS = "/api/v1/trials/{trial_id}/checkpoints"
PREEMPTION = "/api/v1/trials/{trial_id}/preemption"
ACK_PREEMPTION = "/api/v1/trials/{trial_id}/ack_preemption"
SEARCHER_OPERATION = "/api/v1/trials/{trial_id}/searcher/operation"
COMPLETED_OPERATION = "/api/v1/trials/{trial_id}/searcher/completed_operation"
PROGRESS = "/api/v1/trials/{trial_id}/progress"
STATUS = "/api/v1/trials/{trial_id}/status"
EARLY_EXIT = "/api/v1/trials/{trial_id}/early_exit"
LAST_VALIDATION = "/api/v1/trials/{trial_id}/last_validation"

CHECKPOINTS = "/api/v1/checkpoints"
CHECKPOINT = "/api/v1/checkpoints/{uuid}"


def path(template: str, **params: Any) -> str:
    """``template`` with its ``{name}`` parameters filled in."""
    return template.format(**params)


# Checkpoint GC and deletion (admin token only: none of these is in _auth's trial routes)
EXPERIMENT_GC = "/api/v1/experiments/{experiment_id}/gc"
EXPERIMENT_DELETE = "/api/v1/experiments/{experiment_id}/delete"
BEST_CHECKPOINTS = "/api/v1/experiments/{experiment_id}/checkpoints/best"
CHECKPOINTS_DELETE = "/api/v1/checkpoints/delete"
#: A checkpoint's files as a tar.gz read by the master (the web UI's download link, and the
#: SDK's ``Checkpoint.download(mode=DownloadMode.MASTER)``).
CHECKPOINT_ARCHIVE = "/ui/checkpoints/{uuid}.tar.gz"

# The web UI (the pages themselves, /ui/..., are not API routes)
UI_LOGIN_CODE = "/api/v1/ui/login_code"
#: End every browser session (``trialkit ui --revoke``; the master token only).
UI_REVOKE = "/api/v1/ui/revoke"
#: One metric of all trials, for the experiment page's chart.
EXPERIMENT_METRICS = "/api/v1/experiments/{experiment_id}/metrics"
#: An ASHA search's rungs from its searcher's saved state (the experiment page's rungs view).
EXPERIMENT_RUNGS = "/api/v1/experiments/{experiment_id}/searcher/rungs"
#: Server-sent events: what changed in an experiment (the page refetches that part).
EXPERIMENT_EVENTS = "/api/v1/experiments/{experiment_id}/events"
#: Server-sent events: what changed in the experiments list (states, progress, new ones).
EXPERIMENTS_EVENTS = "/api/v1/events/experiments"
#: The TensorBoards ``trialkit tensorboard`` serves for an experiment (the UI links to them).
EXPERIMENT_TENSORBOARDS = "/api/v1/experiments/{experiment_id}/tensorboards"
#: Each hyperparameter's importance by optuna's estimators (the experiment page's importance).
EXPERIMENT_IMPORTANCE = "/api/v1/experiments/{experiment_id}/importance"
