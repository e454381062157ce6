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
from ._data import to_device
from ._lr import LRScheduler
from ._reducer import MetricReducer, _SimpleReducer

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
        self._parent._allow_torch_loader = True

    def disable_auto_to_device(self) -> None:
        """Hand batches to train_batch/evaluate_batch as the loader made them."""
        self._parent._auto_to_device = False


class PyTorchTrialContext(AmpMixin):
    """Everything a PyTorchTrial needs from the harness; built by ``trialkit.pytorch.init()``."""

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
        self._core = core_context
        self.distributed = core_context.distributed
        self._hparams = hparams
        self._exp_conf = exp_conf
        self._trial_seed = trial_seed
        self._aggregation_frequency = aggregation_frequency
        self._steps_completed = steps_completed
        self._managed_training = managed_training
        self._debug = debug_enabled
        self._enable_tensorboard_logging = enable_tensorboard_logging
        self.device = torch.device(device) if device is not None else self._default_device()
        self.models: list[torch.nn.Module] = []
        self.optimizers: list[torch.optim.Optimizer] = []
        self.lr_schedulers: list[LRScheduler] = []
        self._average_aggregated: dict[int, bool] = {}
        self._retired_grads: dict[int, list[torch.Tensor]] = {}
        self._average_default = bool(
            ((exp_conf or {}).get("optimizations") or {}).get("average_aggregated_gradients", True)
        )
        self._scaler: Any = None
        self._auto_amp = False
        self._amp_dtype: torch.dtype | None = None
        self._reducers: list[tuple[MetricReducer, str | None, bool, bool]] = []
        self._stop_requested = False
        self._current_batch_idx: int | None = None
        self._epoch_len: int | None = None
        self._allow_torch_loader = False
        self._auto_to_device = True
        self._warned_types: set[type] = set()
        self._tb_writer: Any = None
        self._profiler: Any = None
        self._apex_used = False
        self.experimental = PyTorchExperimentalContext(self)
        self._global_batch_size, self._per_slot_batch_size = self._batch_sizes()

    # Setup --------------------------------------------------------------------------------------

    def _default_device(self) -> torch.device:
        if torch.cuda.is_available():
            index = self.distributed.local_rank if self.distributed.size > 1 else 0
            torch.cuda.set_device(index)
            return torch.device("cuda", index)
        return torch.device("cpu")

    def _batch_sizes(self) -> tuple[int | None, int | None]:
        if not self._hparams or "global_batch_size" not in self._hparams:
            return None, None
        gbs = self._hparams["global_batch_size"]
        if isinstance(gbs, bool) or not isinstance(gbs, int):
            raise ValueError(f"hyperparameters.global_batch_size: expected an int, got {gbs!r}")
        slots = self.distributed.size
        if gbs < slots:
            raise ValueError(
                f"hyperparameters.global_batch_size: {gbs} is smaller than the {slots} workers"
            )
        per_slot = gbs // slots
        if per_slot * slots != gbs:
            logger.warning(
                "global_batch_size %d is not divisible by %d workers; using %d",
                gbs,
                slots,
                per_slot * slots,
            )
        return per_slot * slots, per_slot

    # Hyperparameters and config -----------------------------------------------------------------

    def get_hparams(self) -> dict[str, Any]:
        if self._hparams is None:
            raise ValueError(
                "this context has no hyperparameters: pass hparams= to trialkit.pytorch.init()"
            )
        return self._hparams

    def get_hparam(self, name: str) -> Any:
        hparams = self.get_hparams()
        if name not in hparams:
            raise ValueError(
                f"hyperparameter {name!r} is not defined; defined: {', '.join(sorted(hparams))}"
            )
        return hparams[name]

    def get_global_batch_size(self) -> int:
        if self._global_batch_size is None:
            raise ValueError("global_batch_size is not a hyperparameter of this trial")
        return self._global_batch_size

    def get_per_slot_batch_size(self) -> int:
        if self._per_slot_batch_size is None:
            raise ValueError("global_batch_size is not a hyperparameter of this trial")
        return self._per_slot_batch_size

    def get_experiment_config(self) -> dict[str, Any]:
        if self._exp_conf is None:
            raise ValueError("this context has no experiment config: pass exp_conf= to init()")
        return self._exp_conf

    def get_data_config(self) -> dict[str, Any]:
        return dict(self.get_experiment_config().get("data") or {})

    def get_experiment_id(self) -> int:
        info = self._core.info
        if info is None:
            raise RuntimeError("get_experiment_id(): not running under a master")
        return info.trial.experiment_id

    def get_trial_id(self) -> int:
        info = self._core.info
        if info is None:
            raise RuntimeError("get_trial_id(): not running under a master")
        return info.trial.trial_id

    def get_trial_seed(self) -> int:
        if self._trial_seed is None:
            raise RuntimeError("get_trial_seed(): this context has no trial seed (local mode)")
        return self._trial_seed

    def get_initial_batch(self) -> int:
        return self._steps_completed

    def get_aggregation_frequency(self) -> int:
        return self._aggregation_frequency

    def get_stop_requested(self) -> bool:
        return self._stop_requested

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Ask the harness to finish this batch, checkpoint and return from fit()."""
        if not isinstance(stop_requested, bool):
            raise TypeError("set_stop_requested() takes a bool")
        self._stop_requested = stop_requested

    # Epoch helpers ------------------------------------------------------------------------------

    def _need_position(self, call: str) -> tuple[int, int]:
        if self._current_batch_idx is None or self._epoch_len is None:
            raise RuntimeError(f"{call}: training has not started")
        return self._current_batch_idx, self._epoch_len

    def current_train_batch(self) -> int:
        return self._need_position("current_train_batch()")[0]

    def current_train_epoch(self) -> int:
        b, n = self._need_position("current_train_epoch()")
        return b // n

    def is_epoch_start(self) -> bool:
        b, n = self._need_position("is_epoch_start()")
        return b % n == 0

    def is_epoch_end(self) -> bool:
        b, n = self._need_position("is_epoch_end()")
        return b % n == n - 1

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
        if self._auto_amp:
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

    def wrap_reducer(
        self,
        reducer: MetricReducer | Callable[[list[Any]], Any],
        name: str | None = None,
        for_training: bool = True,
        for_validation: bool = True,
    ) -> MetricReducer:
        """Register a custom metric reducer (or a function over all values)."""
        if any(r is reducer for r, *_ in self._reducers):
            raise ValueError("wrap_reducer(): this reducer is already wrapped")
        wrapped = reducer if isinstance(reducer, MetricReducer) else _SimpleReducer(reducer)
        self._reducers.append((wrapped, name, for_training, for_validation))
        return wrapped

    # Stepping -----------------------------------------------------------------------------------

    def _is_communicating_batch(self) -> bool:
        idx = self._current_batch_idx or 0
        return (idx + 1) % self._aggregation_frequency == 0

    def backward(
        self,
        loss: torch.Tensor,
        gradient: torch.Tensor | None = None,
        retain_graph: bool = False,
        create_graph: bool = False,
    ) -> None:
        """loss.backward(), with AMP loss scaling and no DDP sync on aggregation-only batches."""
        if self._auto_amp and self._scaler is not None:
            loss = self._scaler.scale(loss)
        self._release_retired_grads()
        with self._no_sync():
            loss.backward(gradient=gradient, retain_graph=retain_graph, create_graph=create_graph)

    def _no_sync(self) -> contextlib.AbstractContextManager[Any]:
        """DDP's no_sync on every wrapped model for a batch that only accumulates; else nothing
        (a plain object, not a generator context manager: this runs on every batch)."""
        if self.distributed.size == 1 or self._is_communicating_batch():
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
        agg = self._aggregation_frequency
        if agg > 1 and not auto_zero_grads:
            raise ValueError("step_optimizer(auto_zero_grads=False) needs aggregation_frequency 1")
        if id(optimizer) not in self._average_aggregated:
            raise ValueError("step_optimizer(): pass an optimizer returned by wrap_optimizer()")
        if agg > 1 and not self._is_communicating_batch():
            return
        if agg > 1 and self._average_aggregated[id(optimizer)]:
            for p in _params(optimizer):
                if p.grad is not None:
                    p.grad.div_(agg)
        scaler = scaler or (self._scaler if self._auto_amp else None)
        if clip_grads is not None:
            if self._auto_amp and scaler is not None:
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
            self._retired_grads[id(optimizer)] = [
                p.grad for p in _params(optimizer) if p.grad is not None
            ]
        optimizer.zero_grad()

    def _release_retired_grads(self) -> None:
        self._retired_grads.clear()

    def to_device(self, data: Any) -> Any:
        """Move the tensors in ``data`` to this worker's device (numpy arrays become tensors)."""
        return to_device(data, self.device, self._warned_types)

    # Tensorboard and profiler -------------------------------------------------------------------

    def get_tensorboard_path(self) -> Any:
        return self._core.train.get_tensorboard_path()

    def get_tensorboard_writer(self) -> Any:
        """A torch SummaryWriter writing into the trial's TensorBoard directory."""
        if self._tb_writer is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as e:
                raise RuntimeError(
                    f"get_tensorboard_writer() needs the tensorboard package ({e}); pip install tensorboard"
                ) from None
            self._tb_writer = SummaryWriter(str(self.get_tensorboard_path()))
        return self._tb_writer

    def set_enable_tensorboard_logging(self, enable: bool) -> None:
        self._enable_tensorboard_logging = bool(enable)

    def get_enable_tensorboard_logging(self) -> bool:
        return self._enable_tensorboard_logging

    def set_profiler(self, *args: Any, **kwargs: Any) -> None:
        """A torch.profiler.profile entered around training and stepped after each batch."""
        kwargs.setdefault(
            "on_trace_ready",
            torch.profiler.tensorboard_trace_handler(str(self.get_tensorboard_path())),
        )
        self._profiler = torch.profiler.profile(*args, **kwargs)
