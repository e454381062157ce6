"""The Core API: metrics, checkpoints, preemption, hyperparameter search and distributed
coordination for any training code. Start with ``with trialkit.core.init() as core_context:``."""

from ._checkpoint import CheckpointContext, DownloadMode
from ._context import Context, init
from ._distributed import DistributedContext, DummyDistributedContext
from ._experimental import ExperimentalCoreContext
from ._preempt import PreemptContext, PreemptMode
from ._profiler import ProfilerContext
from ._searcher import SearcherContext, SearcherMode, SearcherOperation, Unit
from ._tensorboard import TensorboardMode
from ._train import EarlyExitReason, TrainContext
from ._transport import DistributedError, PeerLostError

__all__ = [
    "CheckpointContext",
    "Context",
    "DistributedContext",
    "DistributedError",
    "DownloadMode",
    "DummyDistributedContext",
    "EarlyExitReason",
    "ExperimentalCoreContext",
    "PeerLostError",
    "PreemptContext",
    "PreemptMode",
    "ProfilerContext",
    "SearcherContext",
    "SearcherMode",
    "SearcherOperation",
    "TensorboardMode",
    "TrainContext",
    "Unit",
    "init",
]
