"""``PyTorchTrialContext``: what a Trial uses to register its model, optimizers and schedulers,
and to run backward / optimizer steps under gradient aggregation, AMP and DDP."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

import torch

from .. import core
from ._amp import AmpMixin
from ._context_base import TorchContextBase
from ._lr import LRScheduler
from ._runtime import PyTorchRuntime

logger = logging.getLogger("trialkit.pytorch")


_NOTHING = contextlib.nullcontext()


def _params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"]]


class _DDP(torch.nn.parallel.DistributedDataParallel):
    """DDP whose unknown attributes fall through to the wrapped module."""

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)


class PyTorchExperimentalContext:
    """``context.experimental``: AMP with one call, and opt-outs of harness checks."""

    def __init__(self, parent: PyTorchTrialContext) -> None:
        self._parent = parent

    def use_amp(self) -> None:
        """Automatic mixed precision: autocast in forward, loss scaling, scaler stepping.

        On CUDA: float16 with a GradScaler; without CUDA: bfloat16 autocast on CPU (no scaling)."""
        self._parent._use_auto_amp()

    def disable_dataset_reproducibility_checks(self) -> None:
        """Allow build_*_data_loader to return a plain torch DataLoader (no exact resume)."""
        self._parent.runtime.allow_torch_loader = True

    def disable_auto_to_device(self) -> None:
        """Hand batches to train_batch/evaluate_batch as the loader made them."""
        self._parent.runtime.auto_to_device = False


class PyTorchTrialContext(AmpMixin, TorchContextBase):
    """Everything a PyTorchTrial needs from the harness; built by ``trialkit.pytorch.init()``."""

    runtime: PyTorchRuntime

    def __init__(
        self,
        core_context: core.Context,
        *,
        hparams: dict[str, Any] | None,
        exp_conf: dict[str, Any] | None = None,
        trial_seed: int | None = None,
        aggregation_frequency: int = 1,
        steps_completed: int = 0,
        managed_training: bool = True,
        debug_enabled: bool = False,
        enable_tensorboard_logging: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        if aggregation_frequency < 1:
            raise ValueError(f"aggregation_frequency must be >= 1, got {aggregation_frequency}")
        super().__init__(
            core_context,
            hparams=hparams,
            exp_conf=exp_conf,
            trial_seed=trial_seed,
            steps_completed=steps_completed,
            managed_training=managed_training,
            debug_enabled=debug_enabled,
            enable_tensorboard_logging=enable_tensorboard_logging,
            device=device,
        )
        self.runtime.aggregation_frequency = aggregation_frequency
        self.models: list[torch.nn.Module] = []
        self.optimizers: list[torch.optim.Optimizer] = []
        self.lr_schedulers: list[LRScheduler] = []
        self._average_aggregated: dict[int, bool] = {}
        self._average_default = bool(
            ((exp_conf or {}).get("optimizations") or {}).get("average_aggregated_gradients", True)
        )
        self._amp_dtype: torch.dtype | None = None
        self._apex_used = False
        self.experimental = PyTorchExperimentalContext(self)

    def _new_runtime(self, **fields: Any) -> PyTorchRuntime:
        return PyTorchRuntime(**fields)

    def get_aggregation_frequency(self) -> int:
        return self.runtime.aggregation_frequency

    # Wrapping -----------------------------------------------------------------------------------

    def wrap_model(self, model: torch.nn.Module) -> torch.nn.Module:
        """Move ``model`` to this worker's device, wrap it in DDP with >1 worker, return it."""
        if self._apex_used:
            raise RuntimeError("wrap_model() must be called before configure_apex_amp()")
        model = model.to(self.device)
        if self.distributed.size > 1:
            if not torch.distributed.is_initialized():
                raise RuntimeError(
                    "wrap_model() with several workers needs torch.distributed initialized; "
                    "use trialkit.pytorch.init(), which does it from the launcher's environment"
                )
            ids = [self.device.index] if self.device.type == "cuda" else None
            model = _DDP(model, device_ids=ids)
        if self.runtime.auto_amp:
            self._autocast_forward(model)
        self.models.append(model)
        return model

    def wrap_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        backward_passes_per_step: int = 1,
        fp16_compression: bool | None = None,
        average_aggregated_gradients: bool | None = None,
    ) -> torch.optim.Optimizer:
        """Register ``optimizer`` (returned as is) for stepping, aggregation and checkpoints."""
        if self._apex_used:
            raise RuntimeError("wrap_optimizer() must be called before configure_apex_amp()")
        if backward_passes_per_step < 1:
            raise ValueError(
                f"backward_passes_per_step must be >= 1, got {backward_passes_per_step}"
            )
        if any(o is optimizer for o in self.optimizers):
            raise ValueError("wrap_optimizer(): this optimizer is already wrapped")
        self._average_aggregated[id(optimizer)] = (
            self._average_default
            if average_aggregated_gradients is None
            else bool(average_aggregated_gradients)
        )
        self.optimizers.append(optimizer)
        return optimizer

    def wrap_lr_scheduler(
        self,
        lr_scheduler: Any,
        step_mode: LRScheduler.StepMode,
        frequency: int = 1,
    ) -> Any:
        """Register a scheduler the harness steps per ``step_mode``; returns it unchanged."""
        opt = getattr(lr_scheduler, "optimizer", None)
        if opt is not None and not any(o is opt for o in self.optimizers):
            raise ValueError(
                "wrap_lr_scheduler(): the scheduler's optimizer was not returned by wrap_optimizer()"
            )
        self.lr_schedulers.append(LRScheduler(lr_scheduler, step_mode, frequency))
        return lr_scheduler

    # Stepping -----------------------------------------------------------------------------------

    def backward(
        self,
        loss: torch.Tensor,
        gradient: torch.Tensor | None = None,
        retain_graph: bool = False,
        create_graph: bool = False,
    ) -> None:
        """loss.backward(), with AMP loss scaling and no DDP sync on aggregation-only batches."""
        runtime = self.runtime
        if runtime.auto_amp and runtime.scaler is not None:
            loss = runtime.scaler.scale(loss)
        runtime.release_retired_grads()
        with self._no_sync():
            loss.backward(gradient=gradient, retain_graph=retain_graph, create_graph=create_graph)

    def _no_sync(self) -> contextlib.AbstractContextManager[Any]:
        """DDP's no_sync on every wrapped model for a batch that only accumulates; else nothing
        (a plain object, not a generator context manager: this runs on every batch)."""
        if self.distributed.size == 1 or self.runtime.is_communicating_batch():
            return _NOTHING
        stack = contextlib.ExitStack()
        for m in self.models:
            if isinstance(m, torch.nn.parallel.DistributedDataParallel):
                stack.enter_context(m.no_sync())
        return stack

    def step_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        clip_grads: Callable[[Any], None] | None = None,
        auto_zero_grads: bool = True,
        scaler: Any = None,
    ) -> None:
        """Step on the last batch of each aggregation window (averaging the grads), then zero."""
        runtime = self.runtime
        agg = runtime.aggregation_frequency
        if agg > 1 and not auto_zero_grads:
            raise ValueError("step_optimizer(auto_zero_grads=False) needs aggregation_frequency 1")
        if id(optimizer) not in self._average_aggregated:
            raise ValueError("step_optimizer(): pass an optimizer returned by wrap_optimizer()")
        if agg > 1 and not runtime.is_communicating_batch():
            return
        if agg > 1 and self._average_aggregated[id(optimizer)]:
            for p in _params(optimizer):
                if p.grad is not None:
                    p.grad.div_(agg)
        scaler = scaler or (runtime.scaler if runtime.auto_amp else None)
        if clip_grads is not None:
            if runtime.auto_amp and scaler is not None:
                scaler.unscale_(optimizer)
            clip_grads(_params(optimizer))
        if scaler is not None:
            scaler.step(optimizer)
        else:
            optimizer.step()
        if auto_zero_grads:
            self._zero_grads(optimizer)

    def _zero_grads(self, optimizer: torch.optim.Optimizer) -> None:
        """``optimizer.zero_grad()``; on CPU the dropped gradient tensors stay referenced (not
        attached: ``p.grad`` is None as before) until the next ``backward()``, so they are freed
        just before backward allocates new ones, as in a loop that zeroes before backward. Freed
        before the forward pass instead, glibc hands their memory to the activations and backward
        gets fresh pages: measured +2 % per 5 ms batch (bench/pytorch_overhead.py). CUDA's
        caching allocator has no such cost, and there the memory is worth more."""
        if self.device.type == "cpu":
            self.runtime.retired_grads[id(optimizer)] = [
                p.grad for p in _params(optimizer) if p.grad is not None
            ]
        optimizer.zero_grad()
