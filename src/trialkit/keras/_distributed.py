"""Several TFKerasTrial workers under ``tf.distribute.MultiWorkerMirroredStrategy``.

The launcher (``trialkit.launch.tensorflow``) gives every worker its ``TF_CONFIG``; the strategy
must exist before TensorFlow runs anything, and the model is built in its scope. Each worker
trains on its own shard at the per-slot batch size; gradients are all-reduced, so the weights
stay identical on every worker.

Neither Keras runs ``train_on_batch``/``evaluate`` right under this strategy, so
``MultiWorkerSteps`` runs the compiled model's own ``train_step``/``test_step`` in
``strategy.run`` and reduces the outputs itself: Keras 3's per-replica output reduction fails
(keras-team/keras#20585; ``train_on_batch`` raises "Invalid reduction dimension 0"), and
tf_keras's ``train_on_batch`` treats each worker's batch as the global one and splits it again
across the workers (half the rows each, different weights from one worker).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ._keras import is_keras2, keras_module
from ._trial import TrialContractError

T = TypeVar("T")


def tf_config_workers() -> int:
    """How many workers ``TF_CONFIG`` lists (0 when it is not set)."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return 0
    return len(((json.loads(raw).get("cluster") or {}).get("worker")) or [])


def multi_worker_strategy() -> Any:
    """The ``MultiWorkerMirroredStrategy`` when ``TF_CONFIG`` lists several workers, else None;
    created first thing, before TensorFlow initializes its runtime, as TensorFlow requires."""
    if tf_config_workers() < 2:
        return None
    import logging

    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    # Its INFO lines (one per traced all-reduce) would drown the trial's log.
    logging.getLogger("tensorflow").setLevel(logging.WARNING)
    return strategy


def check_workers(workers: int, strategy: Any) -> None:
    """Several workers need the strategy: they were started by a launcher other than
    trialkit.launch.tensorflow (torchrun's ranks, no TF_CONFIG)."""
    if workers > 1 and strategy is None:
        raise TrialContractError(
            f"a TFKerasTrial on {workers} workers needs TF_CONFIG: start it with python3 -m "
            "trialkit.launch.tensorflow (as the master does for entrypoint: model_def:Trial)"
        )


def scope(strategy: Any) -> contextlib.AbstractContextManager[Any]:
    """``strategy.scope()``, or nothing for one worker."""
    return strategy.scope() if strategy is not None else contextlib.nullcontext()


def on_this_worker(strategy: Any, fn: Callable[[], T]) -> T:
    """``fn()`` reading distributed variables on this worker alone (the chief saving a
    checkpoint): tf_keras reads them with an all-reduce outside a replica context, so there it
    runs in one; Keras 3 reads the local copy as is (and hangs in a replica context)."""
    if strategy is None or not is_keras2(keras_module()):
        return fn()
    out: list[T] = []
    strategy.run(lambda: out.append(fn()))
    return out[0]


def _class_weights(y: Any, class_weight: dict[int, float]) -> Any:
    """Per-sample weights from ``class_weight`` for integer or one-hot labels."""
    import numpy as np

    labels = np.asarray(y)
    if labels.ndim > 1 and labels.shape[-1] > 1:
        labels = labels.argmax(axis=-1)
    labels = labels.reshape(len(labels)).astype(int)
    return np.asarray([class_weight.get(int(c), 1.0) for c in labels], dtype="float32")


class MultiWorkerSteps:
    """Train and evaluate steps of a compiled Keras 3 model under ``strategy``."""

    def __init__(self, model: Any, strategy: Any) -> None:
        import tensorflow as tf

        self.model = model
        self.strategy = strategy
        mean = tf.distribute.ReduceOp.MEAN

        def train(data: Any) -> Any:
            out = strategy.run(model.train_step, args=(data,))
            return {k: strategy.reduce(mean, v, axis=None) for k, v in out.items()}

        def test(data: Any) -> None:
            strategy.run(model.test_step, args=(data,))

        self._train = tf.function(train, reduce_retracing=True)
        self._test = tf.function(test, reduce_retracing=True)

    @staticmethod
    def _data(x: Any, y: Any, w: Any) -> tuple[Any, ...]:
        return (x, y) if w is None else (x, y, w)

    def train_batch(self, x: Any, y: Any, w: Any, class_weight: Any) -> dict[str, float]:
        """One step on this worker's batch; logs are averaged over the workers."""
        if class_weight is not None and w is None:
            w = _class_weights(y, class_weight)
        with self.strategy.scope():
            self.model.reset_metrics()  # per-batch logs, as train_on_batch gives
            logs = self._train(self._data(x, y, w))
        return {k: float(v) for k, v in logs.items()}

    def evaluate(
        self, batches: Iterator[tuple[Any, Any, Any]], steps: int | None, callbacks: Any
    ) -> dict[str, float]:
        """Every batch of this worker's validation shard; the metrics' states are summed over
        the workers when read (they are sum-on-read variables), so the result is the whole
        set's."""
        model = self.model
        model.reset_metrics()
        if callbacks is not None:
            callbacks.on_test_begin()
        with self.strategy.scope():
            for i, (x, y, w) in enumerate(itertools.islice(batches, steps)):
                if callbacks is not None:
                    callbacks.on_test_batch_begin(i)
                self._test(self._data(x, y, w))
                if callbacks is not None:
                    callbacks.on_test_batch_end(i)
            logs = {k: float(v) for k, v in model.get_metrics_result().items()}
        if callbacks is not None:
            callbacks.on_test_end(logs)
        return logs
