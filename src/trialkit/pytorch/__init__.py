"""PyTorchTrial and its harness: subclass ``PyTorchTrial``, then run it with
``Trainer(trial, context).fit(...)`` locally or as ``entrypoint: model_def:MyTrial``."""

from ..harness import Batch, Epoch, TrainUnit
from . import samplers
from ._callback import PyTorchCallback
from ._context import PyTorchExperimentalContext, PyTorchTrialContext
from ._data import DataLoader, TorchData, data_length, to_device
from ._load import CheckpointLoadContext, load_trial_from_checkpoint_path
from ._lr import LRScheduler
from ._reducer import MetricReducer, Reducer
from ._samplers import adapt_batch_sampler
from ._trainer import Trainer, init
from ._trial import PyTorchTrial

__all__ = [
    "Batch",
    "CheckpointLoadContext",
    "DataLoader",
    "Epoch",
    "LRScheduler",
    "MetricReducer",
    "PyTorchCallback",
    "PyTorchExperimentalContext",
    "PyTorchTrial",
    "PyTorchTrialContext",
    "Reducer",
    "TorchData",
    "TrainUnit",
    "Trainer",
    "adapt_batch_sampler",
    "data_length",
    "init",
    "load_trial_from_checkpoint_path",
    "samplers",
    "to_device",
]
