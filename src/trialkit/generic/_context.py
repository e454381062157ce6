"""The Generic API objects: each method forwards to one Core API call."""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from .. import core as core_api


class BasicSearchOp:
    """How long to train (``epochs``): a searcher operation in the draft's words."""

    def __init__(self, op: core_api.SearcherOperation) -> None:
        self._op = op
        self.completed = False

    @property
    def epochs(self) -> int:
        """The length the searcher asks for (``searcher.max_length``, in its unit)."""
        return self._op.length

    @property
    def length(self) -> int:
        return self._op.length

    def report_progress(self, epochs: float) -> None:
        """Optional: how far training got, for progress displays."""
        self._op.report_progress(epochs)

    def complete(self, metric: Any) -> None:
        """Report the final searcher metric of this operation (``report_completed``)."""
        self._op.report_completed(metric)
        self.completed = True


class Training:
    """``context.training``: metrics, the trial's seed and hyperparameters, the searcher."""

    def __init__(self, core: core_api.Context) -> None:
        self._core = core
        self._ops: Iterator[core_api.SearcherOperation] | None = None
        self._op: BasicSearchOp | None = None
        self.steps_completed = 0

    @property
    def trial_seed(self) -> int:
        """The seed the master chose for this trial (0 in local mode)."""
        info = self._core.info
        return info.trial.trial_seed if info is not None else 0

    @property
    def hparams(self) -> dict[str, Any]:
        """This trial's hyperparameters ({} in local mode)."""
        info = self._core.info
        return dict(info.trial.hparams) if info is not None else {}

    def report_training_metrics(
        self,
        batches_trained: int | None = None,
        metrics: dict[str, Any] | None = None,
        *,
        steps_completed: int | None = None,
        batch_metrics: list[dict[str, Any]] | None = None,
    ) -> None:
        """``core.train.report_training_metrics``; ``batches_trained`` is ``steps_completed``."""
        steps = self._steps(batches_trained, steps_completed)
        self._core.train.report_training_metrics(steps, metrics or {}, batch_metrics)

    def report_validation_metrics(
        self,
        batches_trained: int | None = None,
        metrics: dict[str, Any] | None = None,
        *,
        steps_completed: int | None = None,
    ) -> None:
        """``core.train.report_validation_metrics``; the searcher sees these."""
        steps = self._steps(batches_trained, steps_completed)
        self._core.train.report_validation_metrics(steps, metrics or {})

    def basic_search(self) -> BasicSearchOp | None:
        """The next operation from ``core.searcher.operations()``; None when there is none.

        Call it again after ``complete()`` if the searcher may ask this trial to train longer
        (adaptive searchers); the draft's scripts call it once."""
        if self._ops is None:
            self._ops = self._core.searcher.operations()
        op = next(self._ops, None)
        self._op = BasicSearchOp(op) if op is not None else None
        return self._op

    def _finish_search(self) -> None:
        """At a clean exit after ``complete()``, tell the searcher this trial is done with its
        operation. The draft's scripts call ``basic_search()`` once, so if the searcher already
        wants more (an adaptive promotion), the trial exits as preempted and is relaunched to
        train on from its latest checkpoint, where ``basic_search()`` returns the longer op."""
        if self._ops is None or self._op is None or not self._op.completed:
            return
        if next(self._ops, None) is not None and self._core.distributed.rank == 0:
            self._core.searcher.acknowledge_out_of_ops()

    def _steps(self, batches_trained: int | None, steps_completed: int | None) -> int:
        steps = steps_completed if steps_completed is not None else batches_trained
        if steps is None:
            raise TypeError("give batches_trained= (the number of batches trained so far)")
        self.steps_completed = int(steps)
        return self.steps_completed


class CheckpointSaver:
    """``context.checkpoint``: ``save_path()`` is ``core.checkpoint.store_path()``."""

    def __init__(self, core: core_api.Context, training: Training) -> None:
        self._core = core
        self._training = training
        self.last_storage_id: str | None = None

    @contextlib.contextmanager
    def save_path(self, metadata: dict[str, Any] | None = None) -> Iterator[Path]:
        """A directory to write a checkpoint into; it is saved when the block ends.

        ``steps_completed`` defaults to the last ``batches_trained`` reported."""
        meta = {"steps_completed": self._training.steps_completed, **(metadata or {})}
        with self._core.checkpoint.store_path(meta) as (path, storage_id):
            self.last_storage_id = storage_id
            yield path


class GenericContext:
    """What ``init()`` returns; also a context manager that closes the Core context."""

    def __init__(self, core: core_api.Context) -> None:
        self.core = core
        self.training = Training(core)
        self.checkpoint = CheckpointSaver(core, self.training)
        self._closed = False

    @property
    def latest_checkpoint(self) -> contextlib.AbstractContextManager[Path] | None:
        """``with context.latest_checkpoint as path:`` (the trial's checkpoint to resume from),
        or None when there is none."""
        info = self.core.info
        uuid = info.latest_checkpoint if info is not None else None
        if not uuid:
            return None
        return self.core.checkpoint.restore_path(uuid)

    def should_preempt(self, block: bool = True) -> bool:
        """``core.preempt.should_preempt()``; ``block`` is accepted for the draft's signature
        (the answer is kept fresh in the background either way)."""
        return self.core.preempt.should_preempt()

    def close(self, exc: BaseException | None = None) -> bool:
        """Close the Core context (once); True when it swallowed ``exc`` (``InvalidHP``)."""
        if self._closed:
            return False
        self._closed = True
        if exc is None:
            self.training._finish_search()
            return bool(self.core.__exit__(None, None, None))
        return bool(self.core.__exit__(type(exc), exc, exc.__traceback__))

    def __enter__(self) -> GenericContext:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        return self.close(exc)


def init(**core_kwargs: Any) -> GenericContext:
    """Start the Core API (``trialkit.core.init(**core_kwargs)``) and wrap it; it is closed at
    exit, or at the end of ``with generic.init() as context:``."""
    core = core_api.init(**core_kwargs)
    core.__enter__()
    context = GenericContext(core)
    atexit.register(context.close)
    return context
