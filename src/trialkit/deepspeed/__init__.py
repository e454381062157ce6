"""DeepSpeedTrial and its harness: subclass ``DeepSpeedTrial``, build DeepSpeed engines in
``__init__``, and run it with ``Trainer(trial, context).fit(...)`` locally or as
``entrypoint: model_def:MyTrial`` under the master. Runs on CPU (DeepSpeed's CPU accelerator)
and on GPUs, on the loop every trialkit harness shares."""

from ..harness import Batch, Epoch, TrainUnit
from ._config import overwrite_deepspeed_config
from ._context import DeepSpeedTrialContext
from ._mpu import ModelParallelUnit, make_data_parallel_mpu, make_deepspeed_mpu
from ._trainer import Trainer, init
from ._trial import DeepSpeedTrial, TrialContractError

__all__ = [
    "Batch",
    "DeepSpeedTrial",
    "DeepSpeedTrialContext",
    "Epoch",
    "ModelParallelUnit",
    "Trainer",
    "TrialContractError",
    "TrainUnit",
    "init",
    "make_data_parallel_mpu",
    "make_deepspeed_mpu",
    "overwrite_deepspeed_config",
]
