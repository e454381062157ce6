"""``trialkit.pytorch.init()`` and ``Trainer``: run a PyTorchTrial locally or under the master."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from .. import core
from ..contract import ClusterInfo, get_cluster_info
from ..harness import NEVER, Batch, Epoch, LoopSettings, Strategy, Target, TrainLoop, TrainUnit
from ..harness import searcher_targets as _searcher_targets
from ._context import PyTorchTrialContext
from ._context_base import TorchContextBase
from ._rng import seed_all
from ._strategy import TorchStrategy
from ._trial import PyTorchTrial

if TYPE_CHECKING:
    from ..config import SearcherConfig

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
    with open_trial_context(
        PyTorchTrialContext,
        info,
        dist,
        hparams=hparams,
        exp_conf=exp_conf,
        seed=seed,
        enable_tensorboard_logging=enable_tensorboard_logging,
        aggregation_frequency=aggregation_frequency,
    ) as context:
        yield context


ContextT = TypeVar("ContextT", bound=TorchContextBase)


@contextlib.contextmanager
def open_trial_context(
    context_class: Callable[..., ContextT],
    info: ClusterInfo | None,
    dist: core.DistributedContext | None,
    *,
    hparams: dict[str, Any] | None,
    exp_conf: dict[str, Any] | None,
    seed: int | None,
    enable_tensorboard_logging: bool,
    **extra: Any,
) -> Iterator[ContextT]:
    """A torch Trial context over a Core API context on ``dist``'s ranks (the ``init()`` of
    PyTorchTrial and DeepSpeedTrial): a trial under the master gets its hyperparameters (unless
    given), config, seed and steps completed; python, numpy and torch are seeded with the
    trial's seed (locally only with ``seed``). ``extra``: the context class's own arguments."""
    trial_seed, steps_completed = seed, 0
    if info is not None and info.task_type == "TRIAL":
        hparams = dict(info.trial.hparams) if hparams is None else hparams
        exp_conf = info.trial.config
        trial_seed = info.trial.trial_seed
        steps_completed = info.trial.steps_completed
    if trial_seed is not None:
        seed_all(trial_seed)
    with core.init(distributed=dist) as core_context:
        yield context_class(
            core_context,
            hparams=hparams,
            exp_conf=exp_conf,
            trial_seed=trial_seed,
            steps_completed=steps_completed,
            debug_enabled=bool((exp_conf or {}).get("debug")),
            enable_tensorboard_logging=enable_tensorboard_logging,
            **extra,
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


class LoopTrainer:
    """``fit()`` for the torch-based Trials (PyTorchTrial, DeepSpeedTrial): the loop's targets
    and settings from fit's arguments or the master; subclasses supply the strategy."""

    #: Whether every rank saves into (and loads from) its share of each checkpoint.
    _shard_checkpoints = False

    def __init__(self, context: TorchContextBase) -> None:
        self._context = context
        self._core = context._core
        self.loop: TrainLoop | None = None

    def _make_strategy(self) -> Strategy:
        raise NotImplementedError

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
            searcher = info.trial.experiment_config.searcher
            metric, smaller = searcher.metric, searcher.smaller_is_better
            if latest_checkpoint is None and info.latest_checkpoint is not None:
                logger.warning(
                    "the master has checkpoint %s for this trial but fit(latest_checkpoint=None) "
                    "starts from scratch; pass latest_checkpoint=info.latest_checkpoint",
                    info.latest_checkpoint,
                )
            targets = self._cluster_targets(max_length, searcher)
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
            shard_checkpoints=self._shard_checkpoints,
        )
        self.loop = TrainLoop(self._core, self._make_strategy(), settings)
        self.loop.run(targets, latest_checkpoint)

    def _cluster_targets(self, max_length: TrainUnit | None, searcher: SearcherConfig) -> Any:
        if max_length is not None:
            return [Target(_check_length(max_length))]
        return _searcher_targets(
            self._core, searcher, self._context._global_batch_size, self._epoch_len
        )

    def _epoch_len(self) -> int:
        assert self.loop is not None
        return self.loop.epoch_len


class Trainer(LoopTrainer):
    """Trains a PyTorchTrial: ``Trainer(trial, context).fit(max_length=Epoch(1))``."""

    def __init__(
        self, trial: PyTorchTrial, context: PyTorchTrialContext, *, _is_trainer: bool = True
    ) -> None:
        super().__init__(context)
        self._trial = trial
        self._torch_context = context
        self._is_trainer = _is_trainer

    def _make_strategy(self) -> Strategy:
        return TorchStrategy(self._trial, self._torch_context, is_trainer=self._is_trainer)
