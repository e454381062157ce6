"""``trialkit.pytorch.init()`` and ``Trainer``: run a PyTorchTrial locally or under the master."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import torch

from .. import core
from .._info import get_cluster_info
from ._context import PyTorchTrialContext
from ._loop import LoopSettings, Progress, Target, TrainLoop
from ._rng import seed_all
from ._strategy import TorchStrategy
from ._trial import PyTorchTrial
from ._units import NEVER, Batch, Epoch, TrainUnit

logger = logging.getLogger("trialkit.pytorch")

_POLICIES = ("best", "all", "none")


def _torch_distributed(given: core.DistributedContext | None) -> core.DistributedContext | None:
    """With a launcher's WORLD_SIZE > 1: join torch.distributed (gloo on CPU, nccl on GPUs) for
    DDP, and coordinate the harness over the core DistributedContext of the same ranks."""
    if given is not None or int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return given
    if not torch.distributed.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        torch.distributed.init_process_group(backend)
    return core.DistributedContext.from_torch_distributed()


@contextlib.contextmanager
def init(
    *,
    hparams: dict[str, Any] | None = None,
    exp_conf: dict[str, Any] | None = None,
    distributed: core.DistributedContext | None = None,
    aggregation_frequency: int = 1,
    enable_tensorboard_logging: bool = True,
    seed: int | None = None,
) -> Iterator[PyTorchTrialContext]:
    """Yield a PyTorchTrialContext over a Core API context (local mode without a master).

    Under the master, ``hparams=None`` means the trial's own hyperparameters (Determined would
    leave them unset), and python/numpy/torch are seeded with the trial seed. Locally nothing is
    seeded unless ``seed`` is given.
    """
    info = get_cluster_info()
    dist = _torch_distributed(distributed)
    trial_seed = seed
    steps_completed = 0
    if info is not None and info.task_type == "TRIAL":
        hparams = dict(info.trial.hparams) if hparams is None else hparams
        exp_conf = info.trial.config
        trial_seed = info.trial.trial_seed
        steps_completed = info.trial.steps_completed
    if trial_seed is not None:
        seed_all(trial_seed)
    with core.init(distributed=dist) as core_context:
        yield PyTorchTrialContext(
            core_context,
            hparams=hparams,
            exp_conf=exp_conf,
            trial_seed=trial_seed,
            aggregation_frequency=aggregation_frequency,
            steps_completed=steps_completed,
            debug_enabled=bool((exp_conf or {}).get("debug")),
            enable_tensorboard_logging=enable_tensorboard_logging,
        )


def _terminal() -> bool:
    """Whether a person watches this run (stderr is a terminal): then it draws a progress bar."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _check_length(max_length: Any) -> TrainUnit:
    if not isinstance(max_length, (Batch, Epoch)) or not isinstance(max_length.value, int):
        raise TypeError(
            f"fit(max_length=...): expected Batch(int) or Epoch(int), got {max_length!r}"
        )
    return max_length


class _Units:
    """Converts searcher lengths (batches / records / epochs) to loop lengths and back.

    As Determined's PyTorchTrial: records divide by the global batch size, and an epoch is one
    pass over the training loader (``records_per_epoch`` plays no part, reference §7.6.7)."""

    def __init__(self, unit: str, gbs: int | None) -> None:
        self.unit = unit
        self.gbs = gbs
        if unit == "records" and not gbs:
            raise ValueError("a searcher length in records needs hyperparameters.global_batch_size")
        if unit not in ("batches", "records", "epochs"):
            raise ValueError(
                f"searcher unit {unit!r}: the PyTorchTrial harness trains in batches, records or epochs"
            )

    def length(self, n: int) -> TrainUnit:
        if self.unit == "batches":
            return Batch(n)
        if self.unit == "records":
            assert self.gbs
            return Batch._from_records(n, self.gbs)
        return Epoch(n)

    def done(self, p: Progress, epoch_len: int) -> float:
        if self.unit == "batches":
            return float(p.batches_trained)
        if self.unit == "records":
            return float(p.records_trained)
        return p.batches_trained / epoch_len


class Trainer:
    """Trains a PyTorchTrial: ``Trainer(trial, context).fit(max_length=Epoch(1))``."""

    def __init__(
        self, trial: PyTorchTrial, context: PyTorchTrialContext, *, _is_trainer: bool = True
    ) -> None:
        self._trial = trial
        self._context = context
        self._core = context._core
        self._is_trainer = _is_trainer
        self.loop: TrainLoop | None = None

    def configure_profiler(self, *args: Any, **kwargs: Any) -> None:
        logger.error(
            "Trainer.configure_profiler() is deprecated and does nothing; use context.set_profiler()"
        )

    def fit(
        self,
        checkpoint_period: TrainUnit | None = None,
        validation_period: TrainUnit | None = None,
        max_length: TrainUnit | None = None,
        reporting_period: TrainUnit = Batch(100),  # noqa: B008
        checkpoint_policy: str = "best",
        latest_checkpoint: str | None = None,
        step_zero_validation: bool = False,
        test_mode: bool = False,
        profiling_enabled: bool = False,
    ) -> None:
        """Train to ``max_length`` (or the searcher's lengths under the master), validating and
        checkpointing at the given periods; returns after a stop request or preemption too."""
        if checkpoint_policy not in _POLICIES:
            raise ValueError(
                f"fit(checkpoint_policy={checkpoint_policy!r}): expected one of {_POLICIES}"
            )
        info = self._core.info
        on_cluster = info is not None
        metric: str | None = None
        smaller = True
        if not on_cluster:
            if checkpoint_policy == "best":
                warnings.warn(
                    "checkpoint_policy='best' needs a searcher metric; locally it means 'all'",
                    stacklevel=2,
                )
                checkpoint_policy = "all"
            if max_length is None:
                raise ValueError(
                    "fit(max_length=...) is required when training locally, e.g. Epoch(1)"
                )
            targets: Any = [Target(_check_length(max_length))]
            if profiling_enabled:
                logger.warning("fit(profiling_enabled=True) is ignored without a master")
                profiling_enabled = False
            trial_id = 0
        else:
            assert info is not None
            if test_mode:
                raise ValueError("fit(test_mode=True) is only for local runs")
            searcher = dict(info.trial.config.get("searcher") or {})
            metric = searcher.get("metric")
            smaller = bool(searcher.get("smaller_is_better", True))
            if latest_checkpoint is None and info.latest_checkpoint is not None:
                logger.warning(
                    "the master has checkpoint %s for this trial but fit(latest_checkpoint=None) "
                    "starts from scratch; pass latest_checkpoint=info.latest_checkpoint",
                    info.latest_checkpoint,
                )
            targets = self._cluster_targets(max_length, searcher, info.trial.config)
            trial_id = info.trial.trial_id
        if profiling_enabled:
            self._core.profiler.on()
        settings = LoopSettings(
            validation_period=validation_period or NEVER,
            checkpoint_period=checkpoint_period or NEVER,
            reporting_period=reporting_period,
            checkpoint_policy=checkpoint_policy,
            searcher_metric=metric,
            smaller_is_better=smaller,
            step_zero_validation=step_zero_validation,
            test_mode=test_mode,
            trial_id=trial_id,
            initial_batch=self._context.get_initial_batch(),
            on_cluster=on_cluster,
            progress_bar=not on_cluster and not test_mode and _terminal(),
        )
        strategy = TorchStrategy(self._trial, self._context, is_trainer=self._is_trainer)
        self.loop = TrainLoop(self._core, strategy, settings)
        self.loop.run(targets, latest_checkpoint)

    def _cluster_targets(
        self, max_length: TrainUnit | None, searcher: dict[str, Any], config: dict[str, Any]
    ) -> Any:
        gbs = self._context._global_batch_size
        if max_length is not None:
            return [Target(_check_length(max_length))]
        length = searcher.get("max_length")
        if length:
            if not isinstance(length, dict):
                raise ValueError(
                    f"searcher.max_length: {length!r} has no unit; write {{batches: {length}}} "
                    "(or records / epochs) for a Trial class entrypoint"
                )
            [(unit, _)] = length.items()
            return self._operation_targets(_Units(unit, gbs))
        time_metric, max_time = searcher.get("time_metric"), searcher.get("max_time")
        if time_metric and max_time:
            units = _Units(str(time_metric), gbs)
            return [
                Target(
                    units.length(int(max_time)),
                    report_progress=self._fraction(units, int(max_time)),
                )
            ]
        raise ValueError(
            "fit(max_length=...) must be set: the experiment config has neither searcher.max_length "
            "nor searcher.time_metric + max_time"
        )

    def _fraction(self, units: _Units, max_time: int) -> Any:
        def report(p: Progress, total: int) -> None:
            assert self.loop is not None
            self._core.train.report_progress(
                min(units.done(p, self.loop.epoch_len) / max_time, 1.0)
            )

        return report

    def _operation_targets(self, units: _Units) -> Iterator[Target]:
        chief = self._core.distributed.rank == 0
        for op in self._core.searcher.operations():

            def reached(metric: Any, op: Any = op) -> None:
                if chief:
                    op.report_completed(metric)

            def progress(p: Progress, total: int, op: Any = op) -> None:
                assert self.loop is not None
                op.report_progress(min(units.done(p, self.loop.epoch_len), op.length))

            yield Target(units.length(op.length), reached=reached, report_progress=progress)
