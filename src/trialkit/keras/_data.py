"""Training and validation inputs of a TFKerasTrial: ``tf.data.Dataset``,
``keras.utils.PyDataset`` / ``Sequence``, NumPy ``(x, y[, sample_weight])``, and Determined's
``SequenceAdapter``, turned into an endless batch iterator that can start mid-epoch.

NumPy arrays and PyDatasets are shuffled by the harness (the loop's seed and the epoch), so a
resumed trial sees the same order. A ``tf.data.Dataset`` is iterated as given, one pass an
epoch; its own ``shuffle(reshuffle_each_iteration=True)`` starts over on resume, so shuffle it
with a fixed order (or ``reshuffle_each_iteration=False``) to resume exactly."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._trial import TrialContractError


class SequenceAdapter:
    """Determined's ``keras.SequenceAdapter(sequence, use_multiprocessing, workers,
    max_queue_size)``: accepted; the sequence is used directly (Keras 3's PyDataset takes the
    worker settings itself)."""

    def __init__(
        self,
        sequence: Any,
        use_multiprocessing: bool = False,
        workers: int = 1,
        max_queue_size: int = 10,
    ) -> None:
        self.sequence = sequence
        self.use_multiprocessing = use_multiprocessing
        self.workers = workers
        self.max_queue_size = max_queue_size


def _is_tf_dataset(data: Any) -> bool:
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(data, tf.data.Dataset)


def _is_sequence(data: Any) -> bool:
    return (
        hasattr(data, "__getitem__")
        and hasattr(data, "__len__")
        and not isinstance(data, (tuple, list, dict, np.ndarray))
    )


def _as_triple(batch: Any) -> tuple[Any, Any, Any]:
    if isinstance(batch, (tuple, list)):
        if not 1 <= len(batch) <= 3:
            raise TrialContractError(
                f"a training batch must be x, (x, y) or (x, y, sample_weight); got {len(batch)} items"
            )
        x, y, w = (*batch, None, None)[:3]
        return x, y, w
    return batch, None, None


def _rows(x: Any) -> int:
    first = next(iter(x.values())) if isinstance(x, dict) else x
    first = first[0] if isinstance(first, (tuple, list)) else first
    return int(first.shape[0]) if hasattr(first, "shape") else len(first)


def batch_length(batch: tuple[Any, Any, Any]) -> int:
    """Records in a batch (the first input's leading dimension)."""
    return _rows(batch[0])


def _take(x: Any, idx: np.ndarray) -> Any:
    if x is None:
        return None
    if isinstance(x, dict):
        return {k: np.asarray(v)[idx] for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(np.asarray(v)[idx] for v in x)
    return np.asarray(x)[idx]


class TrainingData:
    """One worker's view of the training input: ``epoch_len`` batches per pass."""

    def __init__(self, data: Any, batch_size: int, rank: int, size: int, shuffle: bool) -> None:
        if isinstance(data, SequenceAdapter):
            data = data.sequence
        self.data = data
        self.batch_size = batch_size
        self.rank, self.size = rank, size
        self.shuffle = shuffle
        if _is_tf_dataset(data):
            self.kind = "dataset"
            n = int(data.cardinality())
            if n == -1:  # infinite: epochs cannot be counted
                n = sys.maxsize
            elif n < 0:  # unknown: count one pass
                n = sum(1 for _ in data)
            self.epoch_len = n
        elif _is_sequence(data):
            self.kind = "sequence"
            self.epoch_len = math.ceil(len(data) / size) if size > 1 else len(data)
        elif isinstance(data, (tuple, list)) or hasattr(data, "shape"):
            self.kind = "arrays"
            self.x, self.y, self.w = _as_triple(tuple(data) if isinstance(data, list) else data)
            self.rows = np.arange(_rows(self.x))[rank::size]
            self.epoch_len = math.ceil(len(self.rows) / batch_size)
        else:
            raise TrialContractError(
                f"training data of type {type(data).__name__}: return a tf.data.Dataset, a "
                "keras.utils.PyDataset (or Sequence), or NumPy arrays (x, y[, sample_weight])"
            )
        if self.epoch_len < 1:
            raise TrialContractError("the training data has no batches")

    def _order(self, epoch: int, seed: int, n: int) -> np.ndarray:
        if not self.shuffle:
            return np.arange(n)
        return np.random.default_rng([seed, epoch]).permutation(n)

    def _epoch(self, epoch: int, seed: int, start: int) -> Iterator[tuple[Any, Any, Any]]:
        if self.kind == "dataset":
            ds = self.data.skip(start) if start else self.data
            for batch in ds:
                yield _as_triple(batch)
        elif self.kind == "sequence":
            order = self._order(epoch, seed, len(self.data))[self.rank :: self.size]
            for i in order[start:]:
                yield _as_triple(self.data[int(i)])
            if hasattr(self.data, "on_epoch_end"):
                self.data.on_epoch_end()
        else:
            rows = self.rows[self._order(epoch, seed, len(self.rows))]
            for b in range(start, self.epoch_len):
                idx = rows[b * self.batch_size : (b + 1) * self.batch_size]
                yield _take(self.x, idx), _take(self.y, idx), _take(self.w, idx)

    def one_pass(self) -> Iterator[tuple[Any, Any, Any]]:
        """This worker's batches of one pass in order (a validation shard)."""
        return self._epoch(0, 0, 0)

    def batches(self, skip: int, seed: int) -> Iterator[tuple[Any, Any, Any]]:
        """Every batch from the ``skip``-th on, epoch after epoch."""
        epoch, start = divmod(skip, self.epoch_len)
        while True:
            yield from self._epoch(epoch, seed, start)
            epoch, start = epoch + 1, 0


def evaluate(model: Any, data: Any, batch_size: int, steps: int | None, callbacks: Any) -> Any:
    """``model.evaluate`` over any accepted input, as a dict of metrics."""
    if isinstance(data, SequenceAdapter):
        data = data.sequence
    kwargs: dict[str, Any] = {"steps": steps, "verbose": 0, "return_dict": True}
    if callbacks is not None:
        kwargs["callbacks"] = callbacks
    if _is_tf_dataset(data) or _is_sequence(data):
        return model.evaluate(data, **kwargs)
    if isinstance(data, (tuple, list)) or hasattr(data, "shape"):
        x, y, w = _as_triple(tuple(data) if isinstance(data, list) else data)
        return model.evaluate(x, y, sample_weight=w, batch_size=batch_size, **kwargs)
    raise TrialContractError(
        f"validation data of type {type(data).__name__}: return a tf.data.Dataset, a "
        "keras.utils.PyDataset (or Sequence), or NumPy arrays (x, y[, sample_weight])"
    )
