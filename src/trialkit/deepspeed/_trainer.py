"""``trialkit.deepspeed.init()`` and ``Trainer``: run a DeepSpeedTrial locally or under the
master, on the shared loop with sharded checkpoints."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

import torch

from .. import core
from ..contract import get_cluster_info
from ..harness import Strategy
from ..pytorch import Batch, TrainUnit
from ..pytorch.dsat import trial_reporting_context
from ..pytorch.shared import LoopTrainer, open_trial_context
from ..rendezvous import free_port
from ._context import DeepSpeedTrialContext
from ._strategy import DeepSpeedStrategy
from ._trial import DeepSpeedTrial, TrialContractError

logger = logging.getLogger("trialkit.deepspeed")


def use_cpu_accelerator_without_cuda() -> None:
    """DeepSpeed's CPU accelerator (gloo) where no CUDA is visible, unless one was chosen; a
    chosen ``cuda`` without a GPU is one line saying so."""
    chosen = os.environ.get("DS_ACCELERATOR")
    if chosen is None and not torch.cuda.is_available():
        os.environ["DS_ACCELERATOR"] = "cpu"
    elif chosen == "cuda" and not torch.cuda.is_available():
        raise TrialContractError(
            "DS_ACCELERATOR=cuda but torch sees no CUDA GPU: run on a GPU machine, or set "
            "DS_ACCELERATOR=cpu to train on the CPU"
        )


def _init_distributed(given: core.DistributedContext | None) -> core.DistributedContext | None:
    """Join torch.distributed through DeepSpeed (as its launcher or torchrun describe the ranks,
    or as one rank); the harness coordinates over a core DistributedContext of the same ranks."""
    import deepspeed

    multi = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if not torch.distributed.is_initialized() and not os.environ.get("DET_MANUAL_INIT_DISTRIBUTED"):
        if multi:
            deepspeed.init_distributed(auto_mpi_discovery=False)
        else:
            # One rank, no launcher: a private rendezvous, and no MASTER_PORT/RANK left in the
            # environment for processes started later to inherit. The engine reads LOCAL_RANK.
            os.environ.setdefault("LOCAL_RANK", "0")
            deepspeed.init_distributed(
                auto_mpi_discovery=False,
                init_method=f"tcp://127.0.0.1:{free_port()}",
                rank=0,
                world_size=1,
            )
    if given is not None or not multi:
        return given
    dist = core.DistributedContext.from_launcher_env()
    if dist is None:
        raise TrialContractError(
            "WORLD_SIZE > 1 but no launcher's rank variables (RANK, LOCAL_WORLD_SIZE or "
            "LOCAL_SIZE): start the workers with python3 -m trialkit.launch.deepspeed"
        )
    return dist


@contextlib.contextmanager
def init(
    *,
    hparams: dict[str, Any] | None = None,
    exp_conf: dict[str, Any] | None = None,
    distributed: core.DistributedContext | None = None,
    enable_tensorboard_logging: bool = True,
    seed: int | None = None,
) -> Iterator[DeepSpeedTrialContext]:
    """Yield a DeepSpeedTrialContext over a Core API context, with torch.distributed joined.

    Under the master, ``hparams=None`` means the trial's own hyperparameters, and python, numpy
    and torch are seeded with the trial seed; locally nothing is seeded unless ``seed`` is
    given. Runs on CPU (DeepSpeed's CPU accelerator) where no GPU is visible."""
    use_cpu_accelerator_without_cuda()
    info = get_cluster_info()
    slots = len(info.slot_ids) if info is not None and info.task_type == "TRIAL" else 1
    if slots > 1 and int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        raise TrialContractError(
            f"this trial has {slots} slots but was started without a launcher: "
            "use entrypoint python3 -m trialkit.launch.deepspeed -- python3 -m "
            "trialkit.exec.harness model_def:Trial"
        )
    with open_trial_context(
        DeepSpeedTrialContext,
        info,
        _init_distributed(distributed),
        hparams=hparams,
        exp_conf=exp_conf,
        seed=seed,
        enable_tensorboard_logging=enable_tensorboard_logging,
    ) as context:
        yield context


class Trainer(LoopTrainer):
    """Trains a DeepSpeedTrial: ``Trainer(trial, context).fit(max_length=Batch(100))``; same
    arguments as ``trialkit.pytorch.Trainer.fit``. Checkpoints are saved by every rank."""

    _shard_checkpoints = True

    def __init__(self, trial: DeepSpeedTrial, context: DeepSpeedTrialContext) -> None:
        super().__init__(context)
        self._trial = trial
        self._ds_context = context

    def _make_strategy(self) -> Strategy:
        return DeepSpeedStrategy(self._trial, self._ds_context)


#: DeepSpeed's errors for features a CPU cannot give, and the one line that says what is missing.
_NEEDS_GPU = {
    "Type fp16 is not supported on your device": (
        "the DeepSpeed config enables fp16, which needs a CUDA GPU (DeepSpeed's CPU accelerator "
        'has no fp16): run on a GPU, or use "bf16": {"enabled": true} on the CPU'
    ),
    "Type bf16 is not supported on your device": (
        "the DeepSpeed config enables bf16, which this device does not support: disable it"
    ),
    "ProcessGroupNCCL is only supported with GPUs": (
        "NCCL needs CUDA GPUs: drop the nccl dist_backend (gloo is used on the CPU)"
    ),
}


def build_trial(
    trial_class: type[DeepSpeedTrial], context: DeepSpeedTrialContext
) -> DeepSpeedTrial:
    """``trial_class(context)``; DeepSpeed refusing a GPU-only feature on this machine is one
    line saying what is missing."""
    try:
        return trial_class(context)
    except (ValueError, RuntimeError) as e:
        for message, explained in _NEEDS_GPU.items():
            if message in str(e):
                raise TrialContractError(f"{trial_class.__name__}: {explained}") from None
        raise


def _period(length: Any, gbs: int | None) -> TrainUnit:
    return TrainUnit._from_config(length, gbs)


def run_under_master(trial_class: type[DeepSpeedTrial], info: Any) -> None:
    """``entrypoint: model_def:MyDeepSpeedTrial``: build the trial and fit it to the searcher's
    lengths at the experiment's periods (as Determined's exec/harness.py does)."""
    cfg = info.trial.experiment_config
    gbs = dict(info.trial.hparams).get("global_batch_size")
    with init(hparams=dict(info.trial.hparams), exp_conf=info.trial.config) as context:
        if context.distributed.rank != 0:
            logging.getLogger().setLevel(logging.DEBUG if cfg.debug else logging.WARNING)
        trial = build_trial(trial_class, context)
        with trial_reporting_context(context._core, context.get_hparams()):
            Trainer(trial, context).fit(
                checkpoint_period=_period(cfg.min_checkpoint_period.to_raw(), gbs),
                validation_period=_period(cfg.min_validation_period.to_raw(), gbs),
                reporting_period=Batch(cfg.scheduling_unit),
                checkpoint_policy=cfg.checkpoint_policy,
                latest_checkpoint=info.latest_checkpoint,
                step_zero_validation=cfg.perform_initial_validation,
                profiling_enabled=cfg.profiling.enabled,
            )
