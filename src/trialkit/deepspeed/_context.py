"""``DeepSpeedTrialContext``: what a DeepSpeedTrial uses to register its engines and learn its
micro batch size, gradient accumulation and place in data and pipeline parallelism."""

from __future__ import annotations

import logging
import warnings
from typing import Any

from ..pytorch.shared import TorchContextBase
from ._mpu import ModelParallelUnit, make_data_parallel_mpu, make_deepspeed_mpu
from ._runtime import DeepSpeedRuntime

logger = logging.getLogger("trialkit.deepspeed")


class DeepSpeedTrialContext(TorchContextBase):
    """Everything a DeepSpeedTrial needs from the harness; built by ``trialkit.deepspeed.init()``.

    Unlike Determined's, it runs without GPUs: the device is ``cuda:<local rank>`` where CUDA is
    visible, else the CPU (DeepSpeed's CPU accelerator)."""

    _init_call = "trialkit.deepspeed.init()"
    runtime: DeepSpeedRuntime

    def __init__(self, core_context: Any, **kwargs: Any) -> None:
        super().__init__(core_context, **kwargs)
        self.models: list[Any] = []
        self._mpu: ModelParallelUnit = make_data_parallel_mpu(self.distributed)
        self._mpu_set = False
        self._use_pipeline = False
        self._micro_batch_size: int | None = None
        self._micro_batches: int | None = None

    def _new_runtime(self, **fields: Any) -> DeepSpeedRuntime:
        return DeepSpeedRuntime(**fields)

    # Engines ------------------------------------------------------------------------------------

    def wrap_model_engine(self, model: Any) -> Any:
        """Register a DeepSpeed engine (from ``deepspeed.initialize``, already on its device) for
        checkpoints and evaluation; the first one sets the micro batch size and micro batches
        per step."""
        from deepspeed.runtime.engine import DeepSpeedEngine
        from deepspeed.runtime.pipe.engine import PipelineEngine

        if not isinstance(model, DeepSpeedEngine):
            raise TypeError(
                f"wrap_model_engine() takes the engine deepspeed.initialize() returns, got "
                f"{type(model).__name__}"
            )
        if any(m is model for m in self.models):
            raise ValueError("wrap_model_engine(): this engine is already wrapped")
        micro, steps = model.train_micro_batch_size_per_gpu(), model.gradient_accumulation_steps()
        if self._micro_batch_size is None:
            self._micro_batch_size, self._micro_batches = micro, steps
        elif (micro, steps) != (self._micro_batch_size, self._micro_batches):
            logger.warning(
                "engine %d has train_micro_batch_size_per_gpu %d and gradient_accumulation_steps "
                "%d; the harness uses the first engine's %d and %d",
                len(self.models),
                micro,
                steps,
                self._micro_batch_size,
                self._micro_batches,
            )
        if isinstance(model, PipelineEngine):
            if self.models and not self._use_pipeline:
                raise ValueError(
                    "wrap_model_engine(): a PipelineEngine must be the first engine wrapped"
                )
            self._use_pipeline = True
            if not self._mpu_set:
                self._mpu = make_deepspeed_mpu(model.mpu)
        self.models.append(model)
        return model

    def set_mpu(self, mpu: ModelParallelUnit) -> None:
        """Say which ranks shard data, build loaders and report metrics (model parallelism)."""
        if not self.models:
            raise RuntimeError("set_mpu() must come after wrap_model_engine()")
        if self._mpu_set:
            raise RuntimeError("set_mpu() was already called: pass one ModelParallelUnit")
        if not isinstance(mpu, ModelParallelUnit):
            raise TypeError(f"set_mpu() takes a ModelParallelUnit, got {type(mpu).__name__}")
        self._mpu = mpu
        self._mpu_set = True

    @property
    def mpu(self) -> ModelParallelUnit:
        return self._mpu

    def disable_auto_grad_accumulation(self) -> None:
        """Call train_batch once per optimizer step (it pulls every micro batch itself)."""
        self.runtime.auto_grad_accumulation = False

    def disable_dataset_reproducibility_checks(self) -> None:
        """Allow build_*_data_loader to return any iterable, e.g. a torch DataLoader (no exact
        resume: the harness cannot skip to the data position)."""
        self.runtime.allow_torch_loader = True

    @property
    def use_pipeline_parallel(self) -> bool:
        return self._use_pipeline

    def _need_engine(self, call: str) -> int:
        value = self._micro_batch_size if call.startswith("get_train") else self._micro_batches
        if value is None:
            raise RuntimeError(f"{call}: wrap a model engine with wrap_model_engine() first")
        return value

    def get_train_micro_batch_size_per_gpu(self) -> int:
        return self._need_engine("get_train_micro_batch_size_per_gpu()")

    def get_num_micro_batches_per_slot(self) -> int:
        return self._need_engine("get_num_micro_batches_per_slot()")

    @property
    def train_micro_batch_size_per_gpu(self) -> int:
        warnings.warn(
            "train_micro_batch_size_per_gpu is deprecated; call get_train_micro_batch_size_per_gpu()",
            FutureWarning,
            stacklevel=2,
        )
        return self.get_train_micro_batch_size_per_gpu()

    @property
    def num_micro_batches_per_slot(self) -> int:
        warnings.warn(
            "num_micro_batches_per_slot is deprecated; call get_num_micro_batches_per_slot()",
            FutureWarning,
            stacklevel=2,
        )
        return self.get_num_micro_batches_per_slot()
