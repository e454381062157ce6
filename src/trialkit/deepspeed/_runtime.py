"""``DeepSpeedRuntime``: what a DeepSpeedTrial context shares with its strategy."""

from __future__ import annotations

import dataclasses

from ..pytorch.shared import TorchRuntime


@dataclasses.dataclass(slots=True, kw_only=True, eq=False)
class DeepSpeedRuntime(TorchRuntime):
    """DeepSpeedTrial's addition to the torch runtime."""

    #: The harness calls ``train_batch`` once per micro batch of a step (else once per step:
    #: ``context.disable_auto_grad_accumulation()``).
    auto_grad_accumulation: bool = True
