"""TrialkitCallback: a LightningModule's ``trainer.fit`` under the trialkit master. It reports
``self.log``-ed metrics, stores Lightning checkpoints through CheckpointContext, resumes exactly
mid-epoch, stops on preemption and trains to the searcher's length."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from lightning.pytorch.trainer.states import TrainerFn

from .. import core
from ..contract import get_cluster_info
from ..harness import (
    EVERY_BATCH,
    NEVER,
    Batch,
    Boundaries,
    Epoch,
    Progress,
    Target,
    in_batches,
    report_unit,
    searcher_targets,
)
from ..pytorch.shared import capture_rng, restore_rng
from ._position import DataPosition

logger = logging.getLogger("trialkit.lightning")

CHECKPOINT_FILE = "lightning.ckpt"
STATE_FILE = "trialkit_lightning.json"


def _scalars(metrics: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            out[key] = float(value.detach().cpu().item())
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = float(value)
    return out


def _portable_rng(state: dict[str, Any]) -> dict[str, Any]:
    """RNG states in types ``torch.load(weights_only=True)`` (Lightning's default) accepts."""
    kind, keys, pos, has_gauss, cached = state["np_rng_state"]
    return {
        **state,
        "np_rng_state": (kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached),
        "random_rng_state": list(state["random_rng_state"]),
    }


def _native_rng(state: dict[str, Any]) -> dict[str, Any]:
    kind, keys, pos, has_gauss, cached = state["np_rng_state"]
    version, internal, gauss = state["random_rng_state"]
    return {
        **state,
        "np_rng_state": (kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached),
        "random_rng_state": (version, tuple(internal), gauss),
    }


def _fitting(trainer: pl.Trainer) -> bool:
    """Whether a validation runs inside ``fit`` (not its sanity check, not ``validate()``)."""
    return trainer.state.fn == TrainerFn.FITTING and not trainer.sanity_checking


class TrialkitCallback(pl.Callback):
    """Run ``trainer.fit`` as a trialkit trial; pass ``ckpt_path=callback.ckpt_path`` to fit.

    Under the master the searcher decides the length (the Trainer's max_epochs/max_steps are
    lifted); on its own (local mode) the Trainer's limits apply. ``checkpoint``: a storage id
    to start from (default: the trial's latest checkpoint); ``continue_id``: the id of this run
    (default: the trial id): a checkpoint of another id only warm-starts the weights.
    ``train_metrics_report_period``: batches between training reports, or ``"epoch"``.
    ``checkpoint_period``: batches between checkpoints (default: the experiment's
    ``min_checkpoint_period`` in batches; 0: at searcher lengths, preemption and the end only). ``seed``: the shuffle seed of the training data (default: the trial seed)."""

    def __init__(
        self,
        core_context: core.Context,
        checkpoint: str | None = None,
        continue_id: int | str | None = None,
        *,
        train_metrics_report_period: str | int = 100,
        checkpoint_period: int | None = None,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        if checkpoint_period is not None and (
            not isinstance(checkpoint_period, int) or checkpoint_period < 0
        ):
            raise ValueError(
                f"checkpoint_period: got {checkpoint_period!r}; expected a number >= 0"
            )
        info = get_cluster_info()
        self._core = core_context
        report = report_unit(train_metrics_report_period)
        self._report_epochs = isinstance(report, Epoch)
        self._is_chief = core_context.distributed.rank == 0
        self._sharded = core_context.distributed.size > 1
        cfg = info.trial.experiment_config if info is not None else None
        #: the experiment's searcher section (None: a local run, which has no search)
        self._searcher = cfg.searcher if cfg is not None else None
        self._hparams = info.trial.hparams if info is not None else {}
        if checkpoint_period is None and cfg is not None:  # min_checkpoint_period, in batches
            period = cfg.min_checkpoint_period
            checkpoint_period = period.value if period.unit == "batches" else 0
        #: Lightning validates itself; a searcher target is set in on_train_start
        self._boundaries = Boundaries(
            checkpoint=Batch(checkpoint_period) if checkpoint_period else NEVER,
            report=report,
            stop_check=EVERY_BATCH,
        )
        gbs = self._hparams.get("global_batch_size")
        self._gbs = int(gbs) if gbs else None
        if checkpoint is None and info is not None:
            checkpoint = info.latest_checkpoint
        if continue_id is None:
            continue_id = info.trial.trial_id if info is not None else "local"
        if seed is None:
            seed = info.trial.trial_seed if info is not None else 0
        self._continue_id = continue_id
        self._position = DataPosition(int(seed))
        self._scratch: Path | None = None
        self._warm_start: Path | None = None
        self.ckpt_path: str | None = None  # pass to trainer.fit(ckpt_path=...)
        if checkpoint is not None:
            self._fetch(checkpoint)
        self._resume: dict[str, Any] | None = None
        self._targets: Iterator[Target] | None = None
        self._target: Target | None = None
        self._awaiting_validation = False
        self._preempted = False
        self._val_rng: dict[str, Any] | None = None
        self.batches = 0  # global training batches: the steps_completed of reports
        self._epoch = 0
        self._in_epoch = 0
        self._last_ckpt = -1

    # Lightning hooks ------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "epoch": self._epoch,
            "in_epoch": self._in_epoch,
            "rng": _portable_rng(capture_rng()),
            "continue_id": self._continue_id,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._resume = dict(state_dict)

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._searcher is not None:
            self._targets = iter(
                searcher_targets(
                    self._core, self._searcher, self._gbs, lambda: trainer.num_training_batches
                )
            )
            trainer.fit_loop.max_epochs = -1  # the searcher decides when training ends
            trainer.fit_loop.epoch_loop.max_steps = -1
        if self._warm_start is not None:
            state = torch.load(self._warm_start, map_location="cpu", weights_only=False)
            pl_module.load_state_dict(state["state_dict"])
            logger.info("warm start: weights of another run's checkpoint")

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        epoch, skip = trainer.current_epoch, 0
        resume, self._resume = self._resume, None
        if resume is not None:
            self.batches = int(resume["batches"])
            epoch, skip = int(resume["epoch"]), int(resume["in_epoch"])
            if skip >= trainer.num_training_batches:
                epoch, skip = epoch + 1, 0
            logger.info("resuming at epoch %d, batch %d of the epoch", epoch, skip)
        if resume is not None or self._position.shuffles(trainer):
            self._position.rebuild(trainer, epoch, skip)  # the order of (seed, epoch), at skip
        self._epoch, self._in_epoch = epoch, skip
        if resume is not None:
            restore_rng(_native_rng(resume["rng"]))
        self._last_ckpt = self.batches
        if self._targets is not None:
            self._next_target(trainer)

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.current_epoch != self._epoch or self._in_epoch >= trainer.num_training_batches:
            self._epoch, self._in_epoch = trainer.current_epoch, 0
        if self._in_epoch == 0:
            self._position.seed_epoch(trainer, self._epoch)

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
        batch_idx: int,
    ) -> None:  # fmt: skip
        self.batches += 1
        self._in_epoch += 1
        due = self._boundaries.after_batch(self.batches)
        if due.report and self._is_chief:
            self._report_training(trainer)
        self._report_progress(trainer)
        if due.target and not self._awaiting_validation:
            self._save(trainer)
            self._awaiting_validation = True
            trainer.should_stop = True  # Lightning validates before it stops
            if not trainer.enable_validation:
                self._complete_target(trainer, trainer.callback_metrics)
        elif due.checkpoint:
            self._save(trainer)
        if due.stop_check and self._core.preempt.should_preempt():
            logger.info("preemption requested: checkpoint at batch %d and stop", self.batches)
            if self._last_ckpt != self.batches:
                self._save(trainer)
            self._preempted = True
            if not self._awaiting_validation:  # a searcher length validates first
                trainer.limit_val_batches = 0  # otherwise stop without a validation
            trainer.should_stop = True

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        due = self._boundaries.at_epoch_end(trainer.current_epoch + 1)
        if due.report and self._is_chief:
            self._report_training(trainer)

    def on_validation_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if _fitting(trainer):  # validation must not move the training RNG
            self._val_rng = capture_rng()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not _fitting(trainer):
            return
        if self._val_rng is not None:
            restore_rng(self._val_rng)
            self._val_rng = None
        metrics = self._validation_metrics(trainer)
        if self._is_chief:
            self._core.train.report_validation_metrics(
                steps_completed=self.batches, metrics=self._with_counters(trainer, metrics)
            )
        if self._awaiting_validation:
            self._complete_target(trainer, metrics)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._last_ckpt != self.batches:
            self._save(trainer)

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    # Searcher -------------------------------------------------------------------------------------

    def _next_target(self, trainer: pl.Trainer) -> None:
        assert self._targets is not None
        self._target = next(self._targets, None)
        if self._target is None:
            logger.info("the searcher has no more training for this trial")
            self._boundaries.target = None
            trainer.should_stop = True
        else:
            length = in_batches(self._target.length, trainer.num_training_batches)
            self._boundaries.target = length

    def _complete_target(self, trainer: pl.Trainer, metrics: dict[str, Any]) -> None:
        self._awaiting_validation = False
        target = self._target
        if target is not None and target.reached is not None:
            target.reached(self._searcher_metric(metrics) if self._is_chief else None)
            self._next_target(trainer)
            if self._target is not None and not self._preempted:
                trainer.should_stop = False  # more training: undo the stop that validated
        else:
            self._target = None
            self._boundaries.target = None

    def _searcher_metric(self, metrics: dict[str, Any]) -> float:
        name = self._searcher.metric if self._searcher is not None else None
        values = _scalars(metrics)
        if name not in values:
            raise RuntimeError(
                f"searcher.metric {name!r} was not logged in validation (logged: "
                f"{sorted(values)}); self.log({name!r}, ...) in validation_step"
            )
        return values[name]

    def _report_progress(self, trainer: pl.Trainer) -> None:
        target = self._target
        if not self._is_chief or target is None or target.report_progress is None:
            return
        records = self.batches * self._gbs if self._gbs else 0
        progress = Progress(batches_trained=self.batches, records_trained=records)
        target.report_progress(progress, self._boundaries.target or 0)

    # Metrics --------------------------------------------------------------------------------------

    def _validation_metrics(self, trainer: pl.Trainer) -> dict[str, Any]:
        """What the validation loop logged (Lightning keeps it in the loop's results)."""
        results = trainer.fit_loop.epoch_loop.val_loop._results
        return dict(results.metrics(on_step=False)["callback"])

    def _report_training(self, trainer: pl.Trainer) -> None:
        results = trainer.fit_loop.epoch_loop._results
        metrics = dict(results.metrics(on_step=True)["callback"])  # the latest batch's values
        if self._report_epochs:  # and what was logged with on_epoch=True
            metrics.update(results.metrics(on_step=False)["callback"])
        self._core.train.report_training_metrics(
            steps_completed=self.batches, metrics=self._with_counters(trainer, metrics)
        )

    def _with_counters(self, trainer: pl.Trainer, metrics: dict[str, Any]) -> dict[str, float]:
        out = _scalars(metrics)
        out.setdefault("batches", float(self.batches))
        epoch_len = trainer.num_training_batches
        if epoch_len and epoch_len != float("inf"):
            out.setdefault("epochs", self.batches / epoch_len)
        return out

    # Checkpoints ----------------------------------------------------------------------------------

    def _fetch(self, storage_id: str) -> None:
        """Download a checkpoint to resume (this run's) or warm-start from (another run's)."""
        self._scratch = Path(tempfile.mkdtemp(prefix="tk-lightning-"))
        self._core.checkpoint.download(storage_id, self._scratch)
        ckpt = self._scratch / CHECKPOINT_FILE
        if not ckpt.exists():
            raise RuntimeError(f"checkpoint {storage_id} has no {CHECKPOINT_FILE}")
        state_file = self._scratch / STATE_FILE
        state = json.loads(state_file.read_text()) if state_file.exists() else {}
        if state.get("continue_id") == self._continue_id:
            self.ckpt_path = str(ckpt)
        else:
            self._warm_start = ckpt

    def _save(self, trainer: pl.Trainer) -> None:
        metadata = {"steps_completed": self.batches, "framework": f"lightning-{pl.__version__}"}
        if not self._sharded:
            with self._core.checkpoint.store_path(metadata) as (path, _):
                self._write(trainer, path)
        else:
            with self._core.checkpoint.store_path(metadata, shard=True) as (path, _):
                if self._is_chief:
                    self._write(trainer, path)
                else:  # every rank takes part in Lightning's save; only rank 0 writes files
                    with tempfile.TemporaryDirectory() as scratch:
                        trainer.save_checkpoint(Path(scratch) / CHECKPOINT_FILE)
        self._last_ckpt = self.batches

    def _write(self, trainer: pl.Trainer, path: Path) -> None:
        trainer.save_checkpoint(path / CHECKPOINT_FILE)
        state = {"continue_id": self._continue_id, "batches": self.batches}
        (path / STATE_FILE).write_text(json.dumps(state))
