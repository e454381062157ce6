"""Training lengths and periods: ``Batch(n)`` and ``Epoch(n)`` (Determined's ``TrainUnit``)."""

from __future__ import annotations

import collections.abc
import math
import sys
from typing import Any


class TrainUnit:
    """A length or period in batches or epochs; ``value`` is an int period or a container of
    the step numbers at which to fire."""

    def __init__(self, value: int | collections.abc.Container[int]) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, collections.abc.Container)):
            raise TypeError(
                f"{type(self).__name__}(value): expected an int or a container, got {value!r}"
            )
        self.value = value

    def should_stop(self, n: int) -> bool:
        """Whether the period fires at count ``n`` (1-based)."""
        if isinstance(self.value, int):
            if self.value < 1:
                return True
            return n != 0 and n % self.value == 0
        return n in self.value

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.value == other.value  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.value)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"

    @staticmethod
    def _from_values(
        batches: int | None = None,
        records: int | None = None,
        epochs: int | None = None,
        global_batch_size: int | None = None,
    ) -> TrainUnit:
        """From a config length such as ``min_validation_period``; values < 1 mean never."""
        given = [
            (k, v)
            for k, v in (("batches", batches), ("records", records), ("epochs", epochs))
            if v is not None
        ]
        if len(given) != 1:
            raise ValueError(f"expected exactly one of batches, records, epochs; got {dict(given)}")
        unit, value = given[0]
        value = int(value)
        if value < 1:
            value = sys.maxsize
        if unit == "batches":
            return Batch(value)
        if unit == "epochs":
            return Epoch(value)
        if not global_batch_size:
            raise ValueError(
                "a length in records needs hyperparameters.global_batch_size to convert to batches"
            )
        return Batch._from_records(value, global_batch_size)

    @staticmethod
    def _from_config(length: Any, global_batch_size: int | None) -> TrainUnit:
        if not isinstance(length, dict):
            raise ValueError(f"expected {{batches|records|epochs: N}}, got {length!r}")
        return TrainUnit._from_values(**length, global_batch_size=global_batch_size)


class Batch(TrainUnit):
    """A number of batches (per worker: one optimizer-visible step of the global batch)."""

    @staticmethod
    def _from_records(records: int, global_batch_size: int) -> Batch:
        if records == sys.maxsize:
            return Batch(sys.maxsize)
        return Batch(max(records // global_batch_size, 1))


class Epoch(TrainUnit):
    """A number of passes over the training data loader."""


NEVER = Batch(sys.maxsize)
EVERY_BATCH = Batch(1)


def in_batches(length: TrainUnit, epoch_len: float) -> int:
    """A training length as a number of batches (an epoch being ``epoch_len`` batches)."""
    if not isinstance(length.value, int):
        raise TypeError(f"a training length must be Batch(int) or Epoch(int), got {length!r}")
    if not isinstance(length, Epoch):
        return length.value
    if math.isinf(epoch_len):
        raise ValueError(
            "a length in epochs: the training data has no length; give the length in batches"
        )
    return int(length.value * epoch_len)
