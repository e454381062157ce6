"""Determined's ``determined.pytorch.samplers``: chainable samplers behind
``trialkit.pytorch.DataLoader`` (repeat -> shard -> skip), with Determined's index orders."""

from ._samplers import (
    DistributedBatchSampler,
    DistributedSampler,
    RepeatBatchSampler,
    RepeatSampler,
    ReproducibleShuffleBatchSampler,
    ReproducibleShuffleSampler,
    SeededShuffleSampler,
    SkipBatchSampler,
    SkipSampler,
    adapt_batch_sampler,
)

__all__ = [
    "DistributedBatchSampler",
    "DistributedSampler",
    "RepeatBatchSampler",
    "RepeatSampler",
    "ReproducibleShuffleBatchSampler",
    "ReproducibleShuffleSampler",
    "SeededShuffleSampler",
    "SkipBatchSampler",
    "SkipSampler",
    "adapt_batch_sampler",
]
