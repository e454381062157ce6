"""Reducers: how validation metrics combine over batches and workers, and custom reducers."""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable
from typing import Any

import numpy as np


class Reducer(enum.Enum):
    AVG = 1
    SUM = 2
    MAX = 3
    MIN = 4


class MetricReducer(abc.ABC):
    """A custom metric: ``update`` as you like, then per-slot and cross-slot reductions."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Called before every training or validation workload."""

    @abc.abstractmethod
    def per_slot_reduce(self) -> Any:
        """This worker's (picklable) partial result."""

    @abc.abstractmethod
    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any:
        """Combine every worker's partial result into the metric (or a dict of metrics)."""


class _SimpleReducer(MetricReducer):
    """A plain function over all values passed to ``update`` on every worker."""

    def __init__(self, fn: Callable[[list[Any]], Any]) -> None:
        self._fn = fn
        self._values: list[Any] = []

    def update(self, value: Any) -> None:
        self._values.append(value)

    def reset(self) -> None:
        self._values = []

    def per_slot_reduce(self) -> Any:
        return self._values

    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any:
        flat = [v for vals in per_slot_metrics for v in vals]
        return self._fn(flat)


def _reduce(values: list[Any], reducer: Reducer, weights: list[int] | None = None) -> Any:
    arr = np.asarray(values, dtype=np.float64)
    if reducer == Reducer.AVG:
        out = np.average(arr, axis=0, weights=weights)
    elif reducer == Reducer.SUM:
        out = np.sum(arr, axis=0)
    elif reducer == Reducer.MAX:
        out = np.max(arr, axis=0)
    elif reducer == Reducer.MIN:
        out = np.min(arr, axis=0)
    else:
        raise ValueError(f"unknown reducer {reducer!r}")
    return float(out) if np.ndim(out) == 0 else out


def reduce_batches(
    batch_metrics: list[dict[str, Any]], reducers: Reducer | dict[str, Reducer]
) -> dict[str, Any]:
    """One worker's per-batch metric dicts -> one value per metric."""
    if not batch_metrics:
        return {}
    keys = list(batch_metrics[0])
    if isinstance(reducers, dict) and set(reducers) != set(keys):
        raise ValueError(
            f"evaluation_reducer() keys {sorted(reducers)} must equal the metric keys {sorted(keys)}"
        )
    out = {}
    for k in keys:
        r = reducers[k] if isinstance(reducers, dict) else reducers
        if not isinstance(r, Reducer):
            raise TypeError(f"evaluation_reducer() for {k!r}: expected a Reducer, got {r!r}")
        out[k] = _reduce([m[k] for m in batch_metrics], r)
    return out


def reduce_workers(
    per_worker: list[tuple[dict[str, Any], int]], reducers: Reducer | dict[str, Reducer]
) -> dict[str, Any]:
    """Every worker's (reduced metrics, number of batches) -> one value per metric.

    AVG is weighted by each worker's number of batches; SUM/MAX/MIN are plain."""
    present = [(m, n) for m, n in per_worker if n > 0]
    if not present:
        return {}
    out = {}
    for k in present[0][0]:
        r = reducers[k] if isinstance(reducers, dict) else reducers
        weights = [n for _, n in present] if r == Reducer.AVG else None
        out[k] = _reduce([m[k] for m, _ in present], r, weights)
    return out


def custom_reducer_metrics(
    reducers: list[tuple[MetricReducer, str | None, bool, bool]], dist: Any, training: bool
) -> dict[str, Any]:
    """The metrics of the wrapped custom reducers chosen for training (or validation): one
    allgather of every reducer's per-slot result, then each reducer's cross-slot reduction."""
    chosen = [(r, name) for r, name, t, v in reducers if (t if training else v)]
    if not chosen:
        return {}
    gathered = dist.allgather([r.per_slot_reduce() for r, _ in chosen])
    out: dict[str, Any] = {}
    for i, (r, name) in enumerate(chosen):
        value = r.cross_slot_reduce([w[i] for w in gathered])
        if name is None:
            if not isinstance(value, dict):
                raise TypeError("a reducer wrapped with name=None must return a dict of metrics")
            out.update(value)
        else:
            if isinstance(value, dict):
                raise TypeError(f"reducer {name!r} returned a dict; wrap it with name=None")
            out[name] = value
    return out
