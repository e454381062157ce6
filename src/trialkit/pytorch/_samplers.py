"""Batch samplers for the training chain repeat -> shard -> skip, plus seeded shuffling.

Every sampler here is a pure function of its arguments and the pass number, so a trial that
stops at any batch can rebuild the chain with ``skip`` and continue on the very next batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import Any

import numpy as np
import torch
from torch.utils.data import BatchSampler, Sampler


def _set_pass(sampler: Any, n: int) -> None:
    """Tell a sampler (or the sampler inside a BatchSampler) which pass over the data begins."""
    for obj in (sampler, getattr(sampler, "sampler", None)):
        if obj is not None and hasattr(obj, "set_epoch"):
            obj.set_epoch(n)


class SeededShuffleSampler(Sampler[int]):
    """A permutation of ``range(n)`` that depends only on ``(seed, pass)``: no global RNG."""

    def __init__(self, data_source: Sized, seed: int) -> None:
        self._n = len(data_source)
        self.seed = int(seed)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[int]:
        g = torch.Generator().manual_seed((self.seed * 1_000_003 + self.epoch) % 2**63)
        return iter(torch.randperm(self._n, generator=g).tolist())


class RepeatBatchSampler(Sampler[list[int]]):
    """Repeat a batch sampler forever, announcing each pass via ``set_epoch``."""

    def __init__(self, batch_sampler: Iterable[list[int]]) -> None:
        self.batch_sampler = batch_sampler

    def __len__(self) -> int:
        return len(self.batch_sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[list[int]]:
        n = 0
        while True:
            _set_pass(self.batch_sampler, n)
            empty = True
            for batch in self.batch_sampler:
                empty = False
                yield batch
            if empty:
                raise RuntimeError("the training data loader yields no batches")
            n += 1


class DistributedBatchSampler(Sampler[list[int]]):
    """Global batch ``i`` goes to rank ``i % num_replicas``."""

    def __init__(self, batch_sampler: Iterable[list[int]], num_replicas: int, rank: int) -> None:
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} outside [0, {num_replicas})")
        self.batch_sampler = batch_sampler
        self.num_replicas = num_replicas
        self.rank = rank

    def set_epoch(self, epoch: int) -> None:
        _set_pass(self.batch_sampler, epoch)

    def __len__(self) -> int:
        full = len(self.batch_sampler)  # type: ignore[arg-type]
        return full // self.num_replicas + (1 if full % self.num_replicas > self.rank else 0)

    def __iter__(self) -> Iterator[list[int]]:
        for i, batch in enumerate(self.batch_sampler):
            if i % self.num_replicas == self.rank:
                yield batch


class SkipBatchSampler(Sampler[list[int]]):
    """Drop the first ``skip`` batches once (resuming mid-epoch); length unchanged."""

    def __init__(self, batch_sampler: Iterable[list[int]], skip: int) -> None:
        self.batch_sampler = batch_sampler
        self.skip = int(skip)

    def set_epoch(self, epoch: int) -> None:
        _set_pass(self.batch_sampler, epoch)

    def __len__(self) -> int:
        return len(self.batch_sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.batch_sampler)
        for _ in range(self.skip):
            next(it)
        yield from it


class ReproducibleShuffleBatchSampler(Sampler[list[int]]):
    """Shuffle the order of a batch sampler's batches with ``numpy.RandomState(seed)``."""

    def __init__(self, batch_sampler: Iterable[list[int]], seed: int) -> None:
        self.batch_sampler = batch_sampler
        self.rng = np.random.RandomState(seed)

    def __len__(self) -> int:
        return len(self.batch_sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[list[int]]:
        batches = list(self.batch_sampler)
        self.rng.shuffle(batches)  # type: ignore[arg-type]
        return iter(batches)


def adapt_batch_sampler(
    batch_sampler: Iterable[list[int]],
    repeat: bool = False,
    skip: int = 0,
    num_replicas: int = 1,
    rank: int = 0,
) -> Iterable[list[int]]:
    """Apply repeat -> shard -> skip, in that order (skip counts per-rank batches)."""
    if repeat:
        batch_sampler = RepeatBatchSampler(batch_sampler)
    if num_replicas > 1:
        batch_sampler = DistributedBatchSampler(batch_sampler, num_replicas, rank)
    if skip > 0:
        batch_sampler = SkipBatchSampler(batch_sampler, skip)
    return batch_sampler


__all__ = [
    "BatchSampler",
    "DistributedBatchSampler",
    "RepeatBatchSampler",
    "ReproducibleShuffleBatchSampler",
    "SeededShuffleSampler",
    "SkipBatchSampler",
    "adapt_batch_sampler",
]
