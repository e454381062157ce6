"""The loop's timings while the profiler is on: seconds spent fetching batches and training on
them per reporting period (Determined's ``dataloader_next`` and ``train_batch``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, Protocol


class _Trains(Protocol):
    def train_batch(
        self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int
    ) -> dict[str, Any]: ...


class StepTimings:
    """Sums each batch's fetch and step time until ``take()`` hands them to a report."""

    def __init__(self) -> None:
        self.dataloader_next = 0.0
        self.train_batch = 0.0

    def timed_batch(
        self, it: Iterator[Any], strategy: _Trains, epoch_idx: int, batch_idx: int, epoch_len: int
    ) -> tuple[Any, dict[str, Any]]:
        """The next batch and the strategy's metrics for it, each part timed."""
        start = time.perf_counter()
        batch = next(it)
        fetched = time.perf_counter()
        metrics = strategy.train_batch(batch, epoch_idx, batch_idx, epoch_len)
        self.dataloader_next += fetched - start
        self.train_batch += time.perf_counter() - fetched
        return batch, metrics

    def take(self) -> dict[str, float]:
        """The seconds summed since the last take, by activity; the sums start again at 0."""
        out = {"dataloader_next": self.dataloader_next, "train_batch": self.train_batch}
        self.dataloader_next = self.train_batch = 0.0
        return out
