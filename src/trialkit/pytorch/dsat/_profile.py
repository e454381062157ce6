"""What the profiling trial measured, and the memory arithmetic the search starts from."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

_FIELDS = ("num_params", "trainable_num_params", "activation_mem_per_gpu", "gpu_mem")


class ProfileError(ValueError):
    """The profiling trial's report lacks a number the search needs."""


@dataclasses.dataclass(frozen=True)
class ModelProfile:
    """DeepSpeed's model-info profile (``model_info.json``) plus the device memory, in bytes."""

    num_params: int
    trainable_num_params: int
    activation_mem_per_gpu: int
    gpu_mem: int
    fp16: bool = False

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any], fp16: bool = False) -> ModelProfile:
        """From the profiling trial's reported metrics; ProfileError names a missing field."""
        values = {}
        for name in _FIELDS:
            value = metrics.get(name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ProfileError(
                    f"dsat: the profiling trial reported {name}={value!r}; expected a "
                    "non-negative number (DeepSpeed's model_info.json plus gpu_mem)"
                )
            values[name] = int(value)
        return cls(**values, fp16=fp16)

    def memory_per_stage(self, slots: int) -> dict[int, int]:
        """Bytes each device needs per ZeRO stage at micro-batch 1, assuming Adam (as DeepSpeed's
        own autotuner does): stage 1 shards optimizer state, 2 also gradients, 3 also weights."""
        params = self.num_params * (2 if self.fp16 else 4)
        grads = self.trainable_num_params * 4
        optim = self.trainable_num_params * ((4 if self.fp16 else 0) + 8)
        per_stage = {
            0: params + grads + optim,
            1: params + grads + optim // slots,
            2: params + (grads + optim) // slots,
            3: (params + grads + optim) // slots,
        }
        return {stage: mem + self.activation_mem_per_gpu for stage, mem in per_stage.items()}

    def approx_max_mbs(self, slots: int) -> dict[int, int]:
        """The largest micro-batch per device each stage should fit (at least 1)."""
        act = max(self.activation_mem_per_gpu, 1)
        return {
            stage: max((self.gpu_mem - mem) // act, 1)
            for stage, mem in self.memory_per_stage(slots).items()
        }
