"""What trialkit's other torch harnesses (DeepSpeedTrial, the Lightning callback) build on: the
one place they import PyTorchTrial's internals from. Not user API."""

from ._context_base import TorchContextBase
from ._host_metrics import detached, metrics_to_python
from ._rng import capture_rng, restore_rng
from ._runtime import TorchRuntime
from ._strategy_base import TorchStrategyBase, repeat_forever
from ._trainer import LoopTrainer, open_trial_context
from ._trial import TrialContractError, check_one_evaluate, evaluate_batch_takes_index

__all__ = [
    "LoopTrainer",
    "TorchContextBase",
    "TorchRuntime",
    "TorchStrategyBase",
    "TrialContractError",
    "capture_rng",
    "check_one_evaluate",
    "detached",
    "evaluate_batch_takes_index",
    "metrics_to_python",
    "open_trial_context",
    "repeat_forever",
    "restore_rng",
]
