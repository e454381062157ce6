"""Run a TFKerasTrial under the master: seed, build, and train on the shared loop to the
searcher's lengths at the experiment's validation and checkpoint periods."""

from __future__ import annotations

import logging
import random
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import core
from ..harness import (
    Batch,
    LoopSettings,
    TrainLoop,
    TrainUnit,
    searcher_targets,
)
from ._callbacks import set_tensorboard_dir
from ._context import TFKerasTrialContext
from ._distributed import check_workers, multi_worker_strategy, scope
from ._keras import is_keras2, keras_module
from ._trial import TFKerasTrial, TrialContractError

if TYPE_CHECKING:
    from ..config import Length

logger = logging.getLogger("trialkit.keras")


def seed_all(seed: int) -> None:
    """Python, NumPy and the Keras backend, from the trial seed."""
    keras = keras_module()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    keras.utils.set_random_seed(seed % 2**32)
    if is_keras2(keras):  # tf_keras: generators with a state a checkpoint can hold (exact resume)
        keras.backend.experimental.enable_tf_random_generator()


def _period(length: Length, gbs: int) -> TrainUnit:
    return TrainUnit._from_config(length.to_raw(), gbs)


def refuse_graph_mode(trial_class: type[TFKerasTrial]) -> None:
    """One line for model code that turned TensorFlow 2 behaviour off: Keras 3 has no graph
    mode, and the harness's train step (``train_on_batch(..., return_dict=True)`` between hooks)
    is eager; Determined's TF1 session loop is not reproduced (see docs/keras.md)."""
    tf = sys.modules.get("tensorflow")  # only TensorFlow can be switched to graph mode
    if tf is None or tf.executing_eagerly():
        return
    raise TrialContractError(
        f"{trial_class.__name__}: TensorFlow 1 graph mode (tf.compat.v1.disable_v2_behavior() "
        "or disable_eager_execution()) is not supported; TFKerasTrial trains eagerly: remove "
        "that call and the model code runs in TensorFlow 2 mode"
    )


def run_under_master(trial_class: type[TFKerasTrial], info: Any) -> None:
    """Train ``trial_class`` for this trial (``info`` is the master's ClusterInfo)."""
    refuse_graph_mode(trial_class)  # called at import time
    cfg = info.trial.experiment_config
    hparams = dict(info.trial.hparams)
    # Before anything runs TensorFlow: MultiWorkerMirroredStrategy must come first.
    tf_strategy = multi_worker_strategy()
    seed_all(info.trial.trial_seed)
    searcher = cfg.searcher
    with core.init() as core_context:
        set_tensorboard_dir(core_context.train.get_tensorboard_path())
        context = TFKerasTrialContext(
            core_context,
            hparams=hparams,
            exp_conf=info.trial.config,
            trial_seed=info.trial.trial_seed,
        )
        check_workers(context.distributed.size, tf_strategy)
        from ._strategy import KerasStrategy

        with scope(tf_strategy):  # the model, its optimizer and metrics: distributed variables
            trial = trial_class(context)
            refuse_graph_mode(trial_class)  # or in the Trial's __init__
            strategy = KerasStrategy(trial, context, tf_strategy)
        gbs = context.get_global_batch_size()
        settings = LoopSettings(
            validation_period=_period(cfg.min_validation_period, gbs),
            checkpoint_period=_period(cfg.min_checkpoint_period, gbs),
            reporting_period=Batch(cfg.scheduling_unit),
            checkpoint_policy=cfg.checkpoint_policy,
            searcher_metric=searcher.metric,
            smaller_is_better=searcher.smaller_is_better,
            step_zero_validation=cfg.perform_initial_validation,
            trial_id=info.trial.trial_id,
            initial_batch=info.trial.steps_completed,
            on_cluster=True,
        )
        loop = TrainLoop(core_context, strategy, settings)
        strategy.keras_callback.scheduling_unit = max(int(cfg.scheduling_unit), 1)
        targets = searcher_targets(core_context, searcher, gbs, lambda: loop.epoch_len)
        loop.run(targets, info.latest_checkpoint)
