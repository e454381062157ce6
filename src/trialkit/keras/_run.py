"""Run a TFKerasTrial under the master: seed, build, and train on the shared loop to the
searcher's lengths at the experiment's validation and checkpoint periods."""

from __future__ import annotations

import logging
import random
from typing import Any

import numpy as np

from .. import core
from ..harness import (
    Batch,
    LoopSettings,
    TrainLoop,
    TrainUnit,
    searcher_targets,
)
from ._context import TFKerasTrialContext
from ._distributed import check_workers, multi_worker_strategy, scope
from ._keras import is_keras2, keras_module
from ._trial import TFKerasTrial, TrialContractError

logger = logging.getLogger("trialkit.keras")

_POLICIES = ("best", "all", "none")


def seed_all(seed: int) -> None:
    """Python, NumPy and the Keras backend, from the trial seed."""
    keras = keras_module()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    keras.utils.set_random_seed(seed % 2**32)
    if is_keras2(keras):  # tf_keras: generators with a state a checkpoint can hold (exact resume)
        keras.backend.experimental.enable_tf_random_generator()


def _period(config: dict[str, Any], key: str, gbs: int) -> TrainUnit:
    return TrainUnit._from_config(config.get(key) or {"batches": 0}, gbs)


def run_under_master(trial_class: type[TFKerasTrial], info: Any) -> None:
    """Train ``trial_class`` for this trial (``info`` is the master's ClusterInfo)."""
    config = info.trial.config
    hparams = dict(info.trial.hparams)
    # Before anything runs TensorFlow: MultiWorkerMirroredStrategy must come first.
    tf_strategy = multi_worker_strategy()
    seed_all(info.trial.trial_seed)
    policy = str(config.get("checkpoint_policy") or "best")
    if policy not in _POLICIES:
        raise TrialContractError(f"checkpoint_policy: got {policy!r}; expected one of {_POLICIES}")
    searcher = dict(config.get("searcher") or {})
    with core.init() as core_context:
        context = TFKerasTrialContext(
            core_context, hparams=hparams, exp_conf=config, trial_seed=info.trial.trial_seed
        )
        check_workers(context.distributed.size, tf_strategy)
        from ._strategy import KerasStrategy

        with scope(tf_strategy):  # the model, its optimizer and metrics: distributed variables
            trial = trial_class(context)
            strategy = KerasStrategy(trial, context, tf_strategy)
        gbs = context.get_global_batch_size()
        settings = LoopSettings(
            validation_period=_period(config, "min_validation_period", gbs),
            checkpoint_period=_period(config, "min_checkpoint_period", gbs),
            reporting_period=Batch(int(config.get("scheduling_unit") or 100)),
            checkpoint_policy=policy,
            searcher_metric=searcher.get("metric"),
            smaller_is_better=bool(searcher.get("smaller_is_better", True)),
            step_zero_validation=bool(config.get("perform_initial_validation")),
            trial_id=info.trial.trial_id,
            initial_batch=info.trial.steps_completed,
            on_cluster=True,
        )
        loop = TrainLoop(core_context, strategy, settings)
        strategy.hooks.batches_trained = lambda: loop.progress.batches_trained
        targets = searcher_targets(core_context, searcher, gbs, lambda: loop.epoch_len)
        loop.run(targets, info.latest_checkpoint)
