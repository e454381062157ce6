"""The runtimes of the torch Trial contexts: the state a context shares with its strategy (the
batch position, stop requests, reducers, the profiler, data options; PyTorchTrial's gradient
aggregation and AMP scaler). The context's user calls set it; the strategy reads it."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ..harness import TrialRuntime
from ._reducer import MetricReducer

#: A wrapped reducer: the reducer, its metric name, for training, for validation.
WrappedReducer = tuple[MetricReducer, str | None, bool, bool]


@dataclasses.dataclass(slots=True, kw_only=True, eq=False)
class TorchRuntime(TrialRuntime):
    """What every torch strategy (PyTorchTrial's, DeepSpeedTrial's) shares with its context."""

    #: The batch being trained, set by the strategy before ``train_batch`` (None: not started).
    current_batch_idx: int | None = None
    #: Batches per epoch, set by the strategy once the training loader is built.
    epoch_len: int | None = None
    #: ``context.set_stop_requested()``: finish this batch, checkpoint and return from fit().
    stop_requested: bool = False
    #: ``context.wrap_reducer()``'s reducers, reset and reduced by the strategy.
    reducers: list[WrappedReducer] = dataclasses.field(default_factory=list)
    #: ``context.set_profiler()``'s profiler: entered around training, stepped after each batch.
    profiler: Any = None
    #: The trial may return loaders other than trialkit's DataLoader (no exact resume).
    allow_torch_loader: bool = False
    #: Batches go to the context's device before ``train_batch``/``evaluate_batch``.
    auto_to_device: bool = True
    #: The types ``to_device`` has warned about (once each).
    warned_types: set[type] = dataclasses.field(default_factory=set)


@dataclasses.dataclass(slots=True, kw_only=True, eq=False)
class PyTorchRuntime(TorchRuntime):
    """PyTorchTrial's additions: gradient aggregation and mixed precision."""

    #: Batches whose gradients add up to one optimizer step.
    aggregation_frequency: int = 1
    #: ``context.experimental.use_amp()``: the harness steps the scaler.
    auto_amp: bool = False
    #: The registered ``torch.amp.GradScaler`` (``wrap_scaler``/``use_amp``), checkpointed.
    scaler: Any = None
    #: Zeroed gradients kept until the next backward (see ``PyTorchTrialContext._zero_grads``).
    retired_grads: dict[int, list[torch.Tensor]] = dataclasses.field(default_factory=dict)

    def is_communicating_batch(self) -> bool:
        """Whether the current batch ends an aggregation window (the optimizer steps)."""
        idx = self.current_batch_idx or 0
        return (idx + 1) % self.aggregation_frequency == 0

    def release_retired_grads(self) -> None:
        """Free the gradients the last zeroing retired."""
        self.retired_grads.clear()
