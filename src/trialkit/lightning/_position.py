"""Exact mid-epoch resume for Lightning's training data (what Lightning#18780 gave up).

The shuffle order of every training epoch is made a function of ``(seed, epoch)`` alone: a
``RandomSampler`` (and the DataLoader's worker seeds) draw from a generator that trialkit seeds
at the start of each epoch. A resumed run rebuilds the epoch's iterator under the same seed and
skips the batches already trained, then restores the RNG states saved with the checkpoint.

This reaches into Lightning's fit loop (its data fetcher and combined loader): the ``lightning``
extra pins the minor version it was written against."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from lightning.fabric.utilities.data import _set_sampler_epoch
from torch.utils.data import DataLoader, RandomSampler
from torch.utils.data.dataloader import _SingleProcessDataLoaderIter

_EPOCH_STRIDE = 1_000_003  # keeps (seed, epoch) pairs apart


class _Skip:
    """An iterable over ``loader`` that starts ``skip`` batches in."""

    def __init__(self, loader: Any, skip: int) -> None:
        self.loader = loader
        self.skip = skip

    def __iter__(self) -> Iterator[Any]:
        it = iter(self.loader)
        if isinstance(it, _SingleProcessDataLoaderIter):
            for _ in range(self.skip):  # advance the sampler only: no data is loaded
                it._next_index()
            it._num_yielded += self.skip
        else:
            for _ in range(self.skip):
                next(it)
        return it

    def __len__(self) -> int:
        return len(self.loader)


class DataPosition:
    """Seeds the training loaders per epoch and rebuilds an epoch's iterator at a batch."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.generator = torch.Generator()

    def _loaders(self, trainer: Any) -> list[Any]:
        combined = trainer.fit_loop._combined_loader
        return list(combined.flattened) if combined is not None else []

    def seed_epoch(self, trainer: Any, epoch: int) -> None:
        """Make the coming epoch's shuffle order depend on ``(seed, epoch)`` only."""
        self.generator.manual_seed(self.seed * _EPOCH_STRIDE + epoch)
        for loader in self._loaders(trainer):
            if isinstance(loader, DataLoader) and isinstance(loader.sampler, RandomSampler):
                loader.sampler.generator = self.generator
                loader.generator = self.generator  # the worker seeds

    def shuffles(self, trainer: Any) -> bool:
        """Whether a training loader draws its order from a RandomSampler (seeded by us)."""
        return any(
            isinstance(loader, DataLoader) and isinstance(loader.sampler, RandomSampler)
            for loader in self._loaders(trainer)
        )

    def rebuild(self, trainer: Any, epoch: int, skip: int) -> None:
        """Recreate the training iterator for ``epoch``, ``skip`` batches in."""
        fit_loop = trainer.fit_loop
        combined, fetcher = fit_loop._combined_loader, fit_loop._data_fetcher
        if combined is None or fetcher is None:
            return
        self.seed_epoch(trainer, epoch)
        loaders = list(combined.flattened)
        for loader in loaders:
            _set_sampler_epoch(loader, epoch)
        combined.flattened = [_Skip(loader, skip) for loader in loaders]
        try:
            iter(fetcher)
        finally:
            combined.flattened = loaders  # the iterator keeps the wrappers; the loader does not
