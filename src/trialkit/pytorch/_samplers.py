"""Samplers for the training chain repeat -> shard -> skip, plus seeded shuffling.

The names, arguments and index orders are Determined's ``determined.pytorch.samplers``: for the
same seed, ``ReproducibleShuffleSampler`` and ``ReproducibleShuffleBatchSampler`` yield the same
indices pass after pass (a ``numpy.random.RandomState(seed)`` shuffle of the materialized
list, one shuffle per pass from one generator). ``TorchRandomSampler`` is what
``DataLoader(shuffle=True)`` uses: torch's ``RandomSampler`` order (Determined's), with the seed
each pass drew kept so that a checkpoint can pin it. ``SeededShuffleSampler`` is trialkit's
earlier rule (the order a function of ``(seed, pass)`` only), kept for code that names it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sized
from typing import Any

import numpy as np
import torch
from torch.utils.data import BatchSampler, Sampler


def _set_pass(sampler: Any, n: int) -> None:
    """Tell a sampler (or the sampler inside a BatchSampler) which pass over the data begins."""
    for obj in (sampler, getattr(sampler, "sampler", None)):
        if obj is not None and hasattr(obj, "set_epoch"):
            obj.set_epoch(n)


def _check_shard(num_workers: int, rank: int) -> None:
    if num_workers < 1:
        raise ValueError(f"num_workers must be positive, got {num_workers}")
    if not 0 <= rank < num_workers:
        raise ValueError(f"rank {rank} outside [0, {num_workers})")


def _shard_len(full: int, num_workers: int, rank: int) -> int:
    """Items of ``full`` that rank ``rank`` gets when item ``i`` goes to ``i % num_workers``."""
    return full // num_workers + (1 if full % num_workers > rank else 0)


def _skip(iterable: Iterable[Any], skip: int) -> Iterator[Any]:
    """All but the first ``skip`` items; nothing when there are fewer (Determined's rule)."""
    it = iter(iterable)
    for _ in range(skip):
        try:
            next(it)
        except StopIteration:
            return
    yield from it


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


class TorchRandomSampler(Sampler[int]):
    """torch's ``RandomSampler`` order, Determined's ``shuffle=True``: when a pass begins, an
    int64 is drawn from the global torch RNG and seeds the generator of that pass's
    ``randperm``. The seeds drawn are kept in ``seeds`` (by pass, the last few); ``pinned``
    seeds (from a checkpoint) are used instead of drawing, and passes before the first pinned
    one (skipped on resume) draw nothing, so a resumed run's global RNG and order are those of
    the uninterrupted run."""

    _KEEP = 4

    def __init__(self, data_source: Sized, pinned: Mapping[int, int] | None = None) -> None:
        self._n = len(data_source)
        self.epoch = 0
        self.seeds: dict[int, int] = {}
        self._pinned = {int(k): int(v) for k, v in (pinned or {}).items()}

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[int]:
        p = self.epoch
        if p in self._pinned:
            seed = self._pinned[p]
        elif self._pinned and p < min(self._pinned):
            return iter(range(self._n))  # a pass the resumed run skips whole
        else:
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
        self.seeds[p] = seed
        for old in [k for k in self.seeds if k <= p - self._KEEP]:
            del self.seeds[old]
        generator = torch.Generator()
        generator.manual_seed(seed)
        return iter(torch.randperm(self._n, generator=generator).tolist())


def find_shuffle_sampler(batch_sampler: Any) -> TorchRandomSampler | None:
    """The TorchRandomSampler at the bottom of a sampler chain, if there is one."""
    obj = batch_sampler
    for _ in range(16):
        if isinstance(obj, TorchRandomSampler):
            return obj
        obj = getattr(obj, "batch_sampler", None) or getattr(obj, "sampler", None)
        if obj is None:
            return None
    return None


class RepeatSampler(Sampler[Any]):
    """Repeat a sampler forever; ``len`` is the underlying sampler's."""

    def __init__(self, sampler: Iterable[Any]) -> None:
        self._sampler = sampler

    def __len__(self) -> int:
        return len(self._sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        n = 0
        while True:
            _set_pass(self._sampler, n)
            empty = True
            for item in self._sampler:
                empty = False
                yield item
            if empty:
                raise RuntimeError("RepeatSampler: the underlying sampler yields nothing")
            n += 1


class RepeatBatchSampler(Sampler[list[int]]):
    """Repeat a batch sampler forever, announcing each pass via ``set_epoch``.

    Unlike Determined's (which loops forever on an empty sampler), an empty pass is an error."""

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


class DistributedSampler(Sampler[Any]):
    """Item ``i`` of a sampler goes to rank ``i % num_workers`` (a link in a chain, unlike
    torch's standalone DistributedSampler); ``len`` is this rank's share."""

    def __init__(self, sampler: Iterable[Any], num_workers: int, rank: int) -> None:
        _check_shard(num_workers, rank)
        self._sampler = sampler
        self._num_workers = num_workers
        self._rank = rank

    def set_epoch(self, epoch: int) -> None:
        _set_pass(self._sampler, epoch)

    def __len__(self) -> int:
        return _shard_len(len(self._sampler), self._num_workers, self._rank)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        for i, item in enumerate(self._sampler):
            if i % self._num_workers == self._rank:
                yield item


class DistributedBatchSampler(Sampler[list[int]]):
    """Global batch ``i`` goes to rank ``i % num_workers``; ``len`` is this rank's share.

    ``num_workers`` is Determined's name; ``num_replicas=`` is accepted too."""

    def __init__(
        self,
        batch_sampler: Iterable[list[int]],
        num_workers: int | None = None,
        rank: int = 0,
        *,
        num_replicas: int | None = None,
    ) -> None:
        n = num_workers if num_workers is not None else num_replicas
        if n is None:
            raise TypeError("DistributedBatchSampler needs num_workers")
        _check_shard(n, rank)
        self.batch_sampler = batch_sampler
        self.num_workers = n
        self.rank = rank

    @property
    def num_replicas(self) -> int:
        return self.num_workers

    def set_epoch(self, epoch: int) -> None:
        _set_pass(self.batch_sampler, epoch)

    def __len__(self) -> int:
        return _shard_len(len(self.batch_sampler), self.num_workers, self.rank)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[list[int]]:
        for i, batch in enumerate(self.batch_sampler):
            if i % self.num_workers == self.rank:
                yield batch


class SkipSampler(Sampler[Any]):
    """Drop the first ``skip`` records of a sampler once; ``len`` unchanged. Prefer
    SkipBatchSampler: batches, not records, are what a checkpoint counts."""

    def __init__(self, sampler: Iterable[Any], skip: int) -> None:
        self._sampler = sampler
        self._skip = int(skip)

    def set_epoch(self, epoch: int) -> None:
        _set_pass(self._sampler, epoch)

    def __len__(self) -> int:
        return len(self._sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        return _skip(self._sampler, self._skip)


class SkipBatchSampler(Sampler[list[int]]):
    """Drop the first ``skip`` batches once (resuming mid-epoch); ``len`` unchanged."""

    def __init__(self, batch_sampler: Iterable[list[int]], skip: int) -> None:
        self.batch_sampler = batch_sampler
        self.skip = int(skip)

    def set_epoch(self, epoch: int) -> None:
        _set_pass(self.batch_sampler, epoch)

    def __len__(self) -> int:
        return len(self.batch_sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[list[int]]:
        return _skip(self.batch_sampler, self.skip)


class ReproducibleShuffleSampler(Sampler[Any]):
    """Shuffle a sampler's items with ``numpy.random.RandomState(seed)``: each pass draws the
    next shuffle from the same generator. Shuffle before skip, and skip before repeat."""

    def __init__(self, sampler: Iterable[Any], seed: int) -> None:
        self._sampler = sampler
        self._rng = np.random.RandomState(seed)

    def __len__(self) -> int:
        return len(self._sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        items = list(self._sampler)
        self._rng.shuffle(items)  # type: ignore[arg-type]
        return iter(items)


class ReproducibleShuffleBatchSampler(Sampler[list[int]]):
    """Shuffle the order of a batch sampler's batches with ``numpy.random.RandomState(seed)``,
    one shuffle per pass from the same generator (batch contents stay as they are)."""

    def __init__(self, batch_sampler: Iterable[list[int]], seed: int) -> None:
        self._batch_sampler = batch_sampler
        self._rng = np.random.RandomState(seed)

    @property
    def batch_sampler(self) -> Iterable[list[int]]:
        return self._batch_sampler

    def __len__(self) -> int:
        return len(self._batch_sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[list[int]]:
        batches = list(self._batch_sampler)
        self._rng.shuffle(batches)  # type: ignore[arg-type]
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
    "DistributedSampler",
    "RepeatBatchSampler",
    "RepeatSampler",
    "ReproducibleShuffleBatchSampler",
    "ReproducibleShuffleSampler",
    "SeededShuffleSampler",
    "SkipBatchSampler",
    "SkipSampler",
    "TorchRandomSampler",
    "adapt_batch_sampler",
]
