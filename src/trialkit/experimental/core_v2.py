"""Determined 0.36+'s ``determined.experimental.core_v2`` ("unmanaged" experiments) on
trialkit's local mode: ``init()`` fills this module's ``train``, ``checkpoint``, ... like
Determined's singleton; without a master the run is recorded in ``$TRIALKIT_HOME`` as an
unmanaged experiment named by ``DefaultConfig`` (``trialkit experiment list/describe`` and the
web UI show it with its metrics and checkpoints). Launched by the master (a managed trial, or
``unmanaged=False``) it is ``core.init()``, and ``DefaultConfig`` is ignored, as in Determined."""

from __future__ import annotations

import atexit
import uuid
from dataclasses import dataclass
from typing import Any

from ..contract import ClusterInfo
from ..core import (
    CheckpointContext,
    Context,
    DistributedContext,
    PreemptContext,
    PreemptMode,
    ProfilerContext,
    SearcherContext,
    TensorboardMode,
    TrainContext,
)
from ..core._context import build_context
from ..core._local_run import LocalRun


@dataclass
class DefaultConfig:
    """What an unmanaged run is recorded with (Determined's experiment config keys)."""

    name: str | None = None
    hparams: dict[str, Any] | None = None
    data: dict[str, Any] | None = None
    description: str | None = None
    labels: list[str] | None = None
    checkpoint_storage: str | dict[str, Any] | None = None
    searcher: dict[str, Any] | None = None


@dataclass
class UnmanagedConfig:
    """Where an unmanaged run goes on a Determined cluster. trialkit has no workspaces or
    projects, and each run is a new experiment (external ids are kept in its config only)."""

    workspace: str | None = None
    project: str | None = None
    external_experiment_id: str | None = None
    external_trial_id: str | None = None


@dataclass
class Config(DefaultConfig, UnmanagedConfig):
    """Determined 0.37's merged form of ``DefaultConfig`` and ``UnmanagedConfig``."""


train: TrainContext | None = None
distributed: DistributedContext | None = None
preempt: PreemptContext | None = None
checkpoint: CheckpointContext | None = None
searcher: SearcherContext | None = None
profiler: ProfilerContext | None = None
info: ClusterInfo | None = None
_context: Context | None = None


def _local_run(defaults: DefaultConfig, unmanaged: UnmanagedConfig | None) -> LocalRun:
    data = dict(defaults.data or {})
    for key in ("external_experiment_id", "external_trial_id"):
        value = getattr(unmanaged, key, None)
        if value is not None:
            data.setdefault(key, value)
    searcher = {"metric": "unmanaged", **(defaults.searcher or {}), "name": "single"}
    return LocalRun(
        name=defaults.name or f"unmanaged-{uuid.uuid4().hex[:8]}",
        description=defaults.description,
        labels=tuple(defaults.labels or ()),
        hparams=dict(defaults.hparams or {}),
        data=data,
        searcher={k: searcher[k] for k in ("name", "metric", "smaller_is_better") if k in searcher},
    )


def init_context(
    *,
    defaults: DefaultConfig | None = None,
    unmanaged: UnmanagedConfig | bool | None = None,
    config: Config | None = None,
    client: Any = None,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | dict[str, Any] | None = None,
    preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
) -> Context:
    """A Core API context for this run (``init()`` without the module-level globals).
    ``client`` is accepted and unused: trialkit records unmanaged runs locally."""
    defaults = config or defaults or DefaultConfig()
    extra = config if config is not None else unmanaged
    return build_context(
        distributed=distributed,
        checkpoint_storage=checkpoint_storage or defaults.checkpoint_storage,
        preempt_mode=preempt_mode,
        tensorboard_mode=tensorboard_mode,
        local_run=_local_run(defaults, extra if isinstance(extra, UnmanagedConfig) else None),
    )


def init(
    *,
    defaults: DefaultConfig | None = None,
    unmanaged: UnmanagedConfig | bool | None = None,
    config: Config | None = None,
    client: Any = None,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | dict[str, Any] | None = None,
    preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
) -> None:
    """Start the run and fill ``core_v2.train``, ``.checkpoint``, ``.distributed``,
    ``.preempt``, ``.searcher``, ``.profiler`` and ``.info``; ``close()`` (also at exit) ends it."""
    if _context is not None:
        raise RuntimeError("core_v2.init() was already called; call core_v2.close() first")
    ctx = init_context(
        defaults=defaults,
        unmanaged=unmanaged,
        config=config,
        client=client,
        distributed=distributed,
        checkpoint_storage=checkpoint_storage,
        preempt_mode=preempt_mode,
        tensorboard_mode=tensorboard_mode,
    )
    ctx.__enter__()
    _publish(ctx)
    atexit.register(close)


def _publish(ctx: Context | None) -> None:
    """Set (or, with None, clear) the module-level names Determined's singleton fills."""
    globals().update(
        _context=ctx,
        train=ctx and ctx.train,
        distributed=ctx and ctx.distributed,
        preempt=ctx and ctx.preempt,
        checkpoint=ctx and ctx.checkpoint,
        searcher=ctx and ctx.searcher,
        profiler=ctx and ctx.profiler,
        info=ctx and ctx.info,
    )


def close() -> None:
    """End the run (its experiment ends COMPLETED); safe to call twice."""
    ctx = _context
    if ctx is None:
        return
    _publish(None)
    ctx.__exit__(None, None, None)


__all__ = [
    "Config",
    "DefaultConfig",
    "UnmanagedConfig",
    "checkpoint",
    "close",
    "distributed",
    "info",
    "init",
    "init_context",
    "preempt",
    "profiler",
    "searcher",
    "train",
]
