"""The training loop every Trial harness shares (PyTorchTrial, TFKerasTrial, DeepSpeedTrial):
when to validate, checkpoint, report and stop, in batches, records or epochs. Framework-free;
each harness supplies a ``Strategy`` for how to step, validate, save and load, and its Trial
context a ``TrialRuntime``: all of the context's state a strategy reads."""

from ._boundaries import NOTHING, Boundaries, Due, report_unit
from ._hooks import Hooks
from ._local_context import local_context_args
from ._loop import LoopSettings, Strategy, Target, TrainLoop
from ._progress import TRIAL_STATE, Progress
from ._report import average_batches, format_metrics, report_period, scalar
from ._runtime import TrialRuntime
from ._targets import SearcherUnits, searcher_targets
from ._units import EVERY_BATCH, NEVER, Batch, Epoch, TrainUnit, in_batches

__all__ = [
    "EVERY_BATCH",
    "NEVER",
    "NOTHING",
    "TRIAL_STATE",
    "Batch",
    "Boundaries",
    "Due",
    "Hooks",
    "Epoch",
    "LoopSettings",
    "Progress",
    "SearcherUnits",
    "Strategy",
    "Target",
    "TrainLoop",
    "TrainUnit",
    "TrialRuntime",
    "average_batches",
    "format_metrics",
    "in_batches",
    "local_context_args",
    "report_period",
    "report_unit",
    "scalar",
    "searcher_targets",
]
