"""Batch samplers behind ``trialkit.pytorch.DataLoader`` (Determined's ``pytorch.samplers``)."""

from ._samplers import (
    DistributedBatchSampler,
    RepeatBatchSampler,
    ReproducibleShuffleBatchSampler,
    SeededShuffleSampler,
    SkipBatchSampler,
    adapt_batch_sampler,
)

__all__ = [
    "DistributedBatchSampler",
    "RepeatBatchSampler",
    "ReproducibleShuffleBatchSampler",
    "SeededShuffleSampler",
    "SkipBatchSampler",
    "adapt_batch_sampler",
]
