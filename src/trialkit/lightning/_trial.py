"""LightningTrial: a LightningModule as ``entrypoint: model_def:MyTrial``. The subclass builds the
module and its data; trialkit builds the Trainer with TrialkitCallback and runs ``fit``."""

from __future__ import annotations

import logging
from typing import Any

import lightning.pytorch as pl

from .. import core
from ._callback import TrialkitCallback

logger = logging.getLogger("trialkit.lightning")


class LightningTrialContext:
    """What a LightningTrial gets: the trial's hyperparameters, config and Core API context."""

    def __init__(
        self, core_context: core.Context, hparams: dict[str, Any], config: dict[str, Any]
    ) -> None:
        self.core = core_context
        self.distributed = core_context.distributed
        self._hparams = hparams
        self._config = config

    def get_hparams(self) -> dict[str, Any]:
        return dict(self._hparams)

    def get_hparam(self, name: str) -> Any:
        if name not in self._hparams:
            raise ValueError(
                f"hyperparameter {name!r} is not in the experiment config (have: "
                f"{', '.join(sorted(self._hparams)) or 'none'})"
            )
        return self._hparams[name]

    def get_experiment_config(self) -> dict[str, Any]:
        return self._config


class LightningTrial:
    """Subclass it: ``build_model()`` returns the LightningModule, ``build_datamodule()`` its
    LightningDataModule; ``trainer_kwargs()`` adds Trainer arguments and ``callbacks()`` your
    Lightning callbacks. The searcher decides the length; the experiment's
    ``scheduling_unit`` is the training report period and ``min_checkpoint_period`` (in
    batches) the checkpoint period."""

    def __init__(self, context: LightningTrialContext) -> None:
        self.context = context

    def build_model(self) -> pl.LightningModule:
        raise NotImplementedError(f"{type(self).__name__} must implement build_model()")

    def build_datamodule(self) -> pl.LightningDataModule:
        raise NotImplementedError(f"{type(self).__name__} must implement build_datamodule()")

    def trainer_kwargs(self) -> dict[str, Any]:
        """Extra ``pl.Trainer`` arguments (precision, gradient clipping, val_check_interval...)."""
        return {}

    def callbacks(self) -> list[pl.Callback]:
        return []


def run_under_master(trial_class: type[LightningTrial], info: Any) -> None:
    """How ``trialkit.exec.harness`` runs a LightningTrial class under the master."""
    config = info.trial.config
    unit = info.trial.experiment_config.scheduling_unit
    pl.seed_everything(info.trial.trial_seed, verbose=False)  # as Trial classes are seeded
    with core.init() as core_context:
        trial = trial_class(LightningTrialContext(core_context, dict(info.trial.hparams), config))
        callback = TrialkitCallback(core_context, train_metrics_report_period=unit)
        trainer = pl.Trainer(**_trainer_args(core_context, trial, callback))
        trainer.fit(
            trial.build_model(),
            datamodule=trial.build_datamodule(),
            ckpt_path=callback.ckpt_path,
        )


def _trainer_args(
    core_context: core.Context, trial: LightningTrial, callback: TrialkitCallback
) -> dict[str, Any]:
    dist = core_context.distributed
    args: dict[str, Any] = {
        "devices": dist.local_size,
        "num_nodes": max(1, dist.size // max(1, dist.local_size)),
        "strategy": "ddp" if dist.size > 1 else "auto",
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "num_sanity_val_steps": 0,
    }
    args.update(trial.trainer_kwargs())
    args["callbacks"] = [callback, *trial.callbacks()]
    return args
