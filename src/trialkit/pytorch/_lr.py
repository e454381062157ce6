"""``LRScheduler``: how the harness steps a wrapped learning-rate scheduler.

QUIRK decided: Determined's STEP_EVERY_OPTIMIZER_STEP counts *batches*, so with
``aggregation_frequency > 1`` "every N optimizer steps" is not what happens. trialkit counts
optimizer steps: the scheduler steps after every ``frequency``-th optimizer step.
"""

from __future__ import annotations

import enum
from typing import Any

import torch


class LRScheduler:
    """A wrapped torch LR scheduler plus its step mode and frequency."""

    class StepMode(enum.Enum):
        STEP_EVERY_EPOCH = 1
        STEP_EVERY_BATCH = 2
        MANUAL_STEP = 3
        STEP_EVERY_OPTIMIZER_STEP = 4

    def __init__(
        self,
        scheduler: Any,
        step_mode: LRScheduler.StepMode,
        frequency: int = 1,
    ) -> None:
        if not isinstance(step_mode, LRScheduler.StepMode):
            raise TypeError(f"step_mode must be an LRScheduler.StepMode, got {step_mode!r}")
        if frequency < 1:
            raise ValueError(f"LRScheduler frequency must be >= 1, got {frequency}")
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau) and (
            step_mode != LRScheduler.StepMode.MANUAL_STEP
        ):
            raise ValueError(
                "ReduceLROnPlateau needs a metric: wrap it with step_mode=LRScheduler.StepMode.MANUAL_STEP "
                "and call scheduler.step(metric) yourself (e.g. in a callback's on_validation_end)"
            )
        self._scheduler = scheduler
        self._step_mode = step_mode
        self._frequency = frequency

    def step(self, *args: Any, **kwargs: Any) -> None:
        self._scheduler.step(*args, **kwargs)

    def get_last_lr(self) -> list[float]:
        return self._scheduler.get_last_lr()  # type: ignore[no-any-return]

    def state_dict(self) -> dict[str, Any]:
        return self._scheduler.state_dict()  # type: ignore[no-any-return]

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._scheduler.load_state_dict(state)

    def steps_after_batch(self, batch_idx: int, aggregation_frequency: int, epoch_len: int) -> int:
        """How many times to step after (0-based, global) ``batch_idx``, an optimizer-step batch."""
        mode, freq, agg = self._step_mode, self._frequency, aggregation_frequency
        if mode == LRScheduler.StepMode.STEP_EVERY_BATCH:
            return sum((i + 1) % freq == 0 for i in range(batch_idx - agg + 1, batch_idx + 1))
        if mode == LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP:
            return int(((batch_idx + 1) // agg) % freq == 0)
        if mode == LRScheduler.StepMode.STEP_EVERY_EPOCH:
            n = 0
            for i in range(batch_idx - agg + 1, batch_idx + 1):
                if i % epoch_len == epoch_len - 1 and (i // epoch_len + 1) % freq == 0:
                    n += 1
            return n
        return 0
