"""The training loop every Trial harness shares (PyTorchTrial, TFKerasTrial, DeepSpeedTrial):
when to validate, checkpoint, report and stop, in batches, records or epochs. Framework-free;
each harness supplies a ``Strategy`` for how to step, validate, save and load."""

from ._local_context import local_context_args
from ._loop import LoopSettings, Strategy, Target, TrainLoop
from ._progress import TRIAL_STATE, Progress
from ._report import average_batches, format_metrics, report_period, scalar
from ._targets import SearcherUnits, searcher_targets
from ._units import NEVER, Batch, Epoch, TrainUnit

__all__ = [
    "NEVER",
    "TRIAL_STATE",
    "Batch",
    "Epoch",
    "LoopSettings",
    "Progress",
    "SearcherUnits",
    "Strategy",
    "Target",
    "TrainLoop",
    "TrainUnit",
    "average_batches",
    "format_metrics",
    "local_context_args",
    "report_period",
    "scalar",
    "searcher_targets",
]
