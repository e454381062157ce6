"""The one training loop shared by the Trial harnesses (PyTorchTrial, TFKerasTrial, DeepSpeedTrial).

The loop owns *when* things happen: boundaries for validation, checkpoints, metric reports and
stop requests, the serializable progress counters, the data position and when the RNG state is
captured. A strategy object owns *how*: stepping a batch, validating, saving and loading
framework state, capturing and restoring the framework's RNG. Nothing here imports a framework.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import pickle
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from .. import core
from ..errors import InvalidHP
from ._boundaries import NOTHING, STOP_CHECK_ONLY, Boundaries, Due
from ._hooks import Hooks
from ._progress import TRIAL_STATE, Progress, read_trial_state
from ._report import Bar, average_batches, format_metrics, scalar
from ._timings import StepTimings
from ._units import EVERY_BATCH, TrainUnit, in_batches

logger = logging.getLogger("trialkit.harness")


class Strategy(Protocol):
    """How a framework trains, validates, saves and loads; the loop calls nothing else."""

    def callbacks(self) -> dict[str, Any]: ...
    def use_hooks(self, hooks: Hooks) -> None:
        """The loop's one hook dispatcher: the strategy fires its own hooks through it
        (validation, checkpoint save and load; Keras's per-batch, checkpoint-written and
        training-end hooks too)."""
        ...

    def build_train_iterator(self, skip: int, seed: int) -> tuple[Iterator[Any], int]: ...
    def train_batch(
        self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int
    ) -> dict[str, Any]: ...
    def batch_length(self, batch: Any) -> int: ...
    def reset_reducers(self) -> None: ...
    def training_reducer_metrics(self) -> dict[str, Any]: ...
    def metrics_to_python(self, batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The batches' ``train_batch`` metrics as plain numbers and lists (for a report)."""
        ...

    def validate(self, test_mode: bool) -> dict[str, Any]: ...
    def stop_requested(self) -> bool: ...
    def save(self, path: Path, rng_state: dict[str, Any]) -> None: ...
    def load(self, path: Path) -> dict[str, Any] | None: ...
    def training_started(self) -> None: ...
    def training_ended(self) -> None: ...
    def capture_rng(self) -> dict[str, Any]: ...
    def restore_rng(self, state: dict[str, Any]) -> None: ...
    def fresh_seed(self) -> int:
        """A data-order seed for a fresh start (the loop broadcasts the chief's)."""
        ...

    def checkpoint_metadata(self) -> dict[str, Any]:
        """``framework`` and ``format`` for the checkpoint's metadata."""
        ...


@dataclasses.dataclass
class Target:
    """Train until ``length``; then validate and hand the searcher metric to ``reached``."""

    length: TrainUnit
    reached: Callable[[Any], None] | None = None
    report_progress: Callable[[Progress, int], None] | None = None


@dataclasses.dataclass
class LoopSettings:
    validation_period: TrainUnit
    checkpoint_period: TrainUnit
    reporting_period: TrainUnit
    checkpoint_policy: str = "best"
    searcher_metric: str | None = None
    smaller_is_better: bool = True
    step_zero_validation: bool = False
    test_mode: bool = False
    trial_id: int = 0
    initial_batch: int = 0
    on_cluster: bool = False
    progress_bar: bool = False
    #: Every rank saves into its share of each checkpoint (``store_path(shard=True)``) and
    #: loads from it: DeepSpeed's engines write per-rank optimizer and parameter shards.
    shard_checkpoints: bool = False


class _Stop(Exception):
    """Unwinds the loop at a batch boundary after a stop request or preemption."""


class TrainLoop:
    """Runs targets to completion, or until a stop request, on every worker in lockstep."""

    def __init__(
        self, core_context: core.Context, strategy: Strategy, settings: LoopSettings
    ) -> None:
        self.core = core_context
        self.dist = core_context.distributed
        self.strategy = strategy
        self.hooks = Hooks(strategy.callbacks)
        strategy.use_hooks(self.hooks)
        self.s = settings
        self.progress = Progress(trial_id=settings.trial_id)
        self._batch_metrics: list[dict[str, Any]] = []
        self._iter: Iterator[Any] | None = None
        self.epoch_len = 1
        self.last_validation: dict[str, Any] = {}
        self.last_checkpoint: str | None = None
        self._status_shown = ""
        self._bar: Bar | None = Bar() if settings.progress_bar and self._chief else None
        self._timings: StepTimings | None = None  # while the profiler is on (the chief's)

    # Hooks --------------------------------------------------------------------------------------

    def _cb(self, hook: str, *args: Any) -> None:
        self.hooks.fire(hook, *args)

    @property
    def _chief(self) -> bool:
        return self.dist.rank == 0

    def _set_status(self, status: str) -> None:
        """Tell the master what the trial is doing (chief only, and only when it changed)."""
        if self._chief and status != self._status_shown:
            self._status_shown = status
            self.core.train.set_status(status)

    # Entry --------------------------------------------------------------------------------------

    def run(self, targets: Iterable[Target], latest_checkpoint: str | None = None) -> None:
        self._cb("on_trial_startup", self.s.initial_batch, latest_checkpoint)
        try:
            self._run(targets, latest_checkpoint)
            self._set_status("")  # done: a finished trial is not "checkpointing"
        finally:
            if self._bar is not None:
                self._bar.stop()
            self._cb("on_trial_shutdown")

    def _run(self, targets: Iterable[Target], latest_checkpoint: str | None) -> None:
        rng = self._restore(latest_checkpoint) if latest_checkpoint else None
        if rng is None:  # a fresh start or a warm start: new data order
            self.progress.shuffle_seed = self._fresh_seed()
        self._iter, epoch_len = self.strategy.build_train_iterator(
            self.progress.batches_trained, self.progress.shuffle_seed
        )
        self.epoch_len = max(int(self.dist.broadcast(epoch_len)), 1)
        if rng is not None:
            self.strategy.restore_rng(rng)
        self.strategy.training_started()
        self._cb("on_training_start")
        try:
            if (
                self.s.step_zero_validation
                and self.progress.batches_trained == 0
                and not self._master_has_validation()
            ):
                self._validate()
            for target in targets:
                self._train_to(target)
                if not self._validation_current():
                    self._validate()
                if target.reached is not None:
                    target.reached(self.progress.last_searcher_metric)
            if not self._validation_current():
                self._validate()
            if not self._checkpoint_current():
                self._checkpoint()
        except _Stop:
            logger.info("stopping at batch %d: checkpointing", self.progress.batches_trained)
            if not self._checkpoint_current():
                self._checkpoint()
        except InvalidHP:
            if not self._checkpoint_current():
                self._checkpoint()
            raise
        finally:
            self.strategy.training_ended()

    def _fresh_seed(self) -> int:
        return int(self.dist.broadcast(self.strategy.fresh_seed()))

    def _master_has_validation(self) -> bool:
        """Whether an earlier run of this trial reported a validation (its step-zero one too)."""
        if not self.s.on_cluster:
            return False
        last = self.core.train._get_last_validation() if self._chief else None
        return self.dist.broadcast(last) is not None

    # Training -----------------------------------------------------------------------------------

    def _boundaries(self, total: int) -> Boundaries:
        s = self.s
        return Boundaries(
            validation=s.validation_period,
            checkpoint=s.checkpoint_period,
            report=s.reporting_period,
            stop_check=EVERY_BATCH,
            target=total,
        )

    def _train_to(self, target: Target) -> None:
        total = 1 if self.s.test_mode else in_batches(target.length, self.epoch_len)
        p, strategy, it = self.progress, self.strategy, self._iter
        assert it is not None
        epoch_len, workers = self.epoch_len, self.dist.size
        boundaries = self._boundaries(total)
        bar = self._bar
        if bar is not None:
            bar.start(p.batches_trained, total)
        timings = self._timings_while_profiling()
        while not boundaries.reached(p.batches_trained):
            batch_idx = p.batches_trained
            epoch_idx, in_epoch = divmod(batch_idx, epoch_len)
            if in_epoch == 0:
                self._cb("on_training_epoch_start", epoch_idx)
            if not self._batch_metrics:
                strategy.reset_reducers()
            if timings is None:  # profiling off: one check a batch (bench/README.md: loop-timings)
                batch = next(it)
                metrics = strategy.train_batch(batch, epoch_idx, batch_idx, epoch_len)
            else:
                batch, metrics = timings.timed_batch(it, strategy, epoch_idx, batch_idx, epoch_len)
            self._batch_metrics.append(metrics)
            p.batches_trained = batches = batch_idx + 1
            p.records_trained += strategy.batch_length(batch) * workers
            if bar is not None:
                bar.advance()
            due = boundaries.after_batch(batches)
            if in_epoch == epoch_len - 1:
                self._cb("on_training_epoch_end", epoch_idx)
                p.epochs_trained += 1
                due |= boundaries.at_epoch_end(p.epochs_trained)
            if due is STOP_CHECK_ONLY:  # most batches: only the stop check
                if self._should_stop():
                    self._stop()
            elif due is not NOTHING:
                self._act_on(due, target, total)

    def _timings_while_profiling(self) -> StepTimings | None:
        """The chief's timings when its profiler is on (``profiling.enabled``), else None."""
        if not (self._chief and self.core.profiler.is_on):
            self._timings = None
        elif self._timings is None:
            self._timings = StepTimings()
        return self._timings

    def _act_on(self, due: Due, target: Target, total: int) -> None:
        """Report, validate, checkpoint and check for a stop, as the boundary demands."""
        p = self.progress
        if due.validate or due.checkpoint or due.report or due.target:
            self._report_training()
            if self._chief:
                if target.report_progress is not None:
                    target.report_progress(p, total)
                else:
                    self.core.train.report_progress(min(p.batches_trained / max(total, 1), 1.0))
        if due.validate and not self._validation_current():
            self._validate()
        if due.checkpoint and not self._checkpoint_current():
            self._checkpoint()
        if due.stop_check and self._should_stop():
            self._stop()

    def _stop(self) -> None:
        """Report what was trained since the last report, then unwind to the checkpoint."""
        if self._batch_metrics:
            self._report_training()
        raise _Stop()

    def _should_stop(self) -> bool:
        mine = self.strategy.stop_requested()
        if self.dist.size > 1:
            mine = any(self.dist.allgather(mine))
        return self.core.preempt.should_preempt() or mine

    def _report_training(self) -> None:
        batches = self.strategy.metrics_to_python(self._batch_metrics)
        self._batch_metrics = []
        if self.dist.size > 1:
            gathered = self.dist.allgather(batches)
            batches = [
                average_batches([w[i] for w in gathered if i < len(w)]) for i in range(len(batches))
            ]
        avg = average_batches(batches)
        avg.update(self.strategy.training_reducer_metrics())
        if self._chief:
            report = dict(avg)
            report.setdefault("batches", self.progress.batches_trained)
            report.setdefault("epochs", self.progress.epochs_trained)
            report.setdefault("records", self.progress.records_trained)
            self.core.train.report_training_metrics(
                steps_completed=self.progress.batches_trained, metrics=report, batch_metrics=batches
            )
            self._log_metrics("training", report)
            if self._timings is not None:
                self.core.profiler.report_timings(
                    self.progress.batches_trained, self._timings.take()
                )
        self._cb("on_training_workload_end", avg, batches)

    def _log_metrics(self, group: str, metrics: dict[str, Any]) -> None:
        """One trial-log line per report (Determined logs them too); formatted only when shown."""
        batch = self.progress.batches_trained
        if self._bar is not None:
            self._bar.show(metrics)
            if group != "training":
                self._bar.log(f"[batch {batch}] {group}: {format_metrics(metrics)}")
        elif logger.isEnabledFor(logging.INFO):
            logger.info("[batch %d] %s: %s", batch, group, format_metrics(metrics))

    # Validation ---------------------------------------------------------------------------------

    def _validation_current(self) -> bool:
        return self.progress.last_val == self.progress.batches_trained

    def _checkpoint_current(self) -> bool:
        return self.progress.last_ckpt == self.progress.batches_trained

    def _validate(self) -> None:
        # Validation must not move the training RNG: a run resumed after a checkpoint and one
        # that validated at other points then draw identical dropout masks and shuffles.
        rng = self.strategy.capture_rng()
        self._set_status("validating")
        try:
            metrics = self.strategy.validate(self.s.test_mode)
        finally:
            self.strategy.restore_rng(rng)
        p = self.progress
        p.last_val = p.batches_trained
        save = False
        if self._chief:
            metrics = {k: scalar(v) for k, v in metrics.items()}
            metrics.setdefault("batches", p.batches_trained)
            metrics.setdefault("epochs", p.epochs_trained)
            metrics.setdefault("records", p.records_trained)
            self.core.train.report_validation_metrics(
                steps_completed=p.batches_trained, metrics=metrics
            )
            self._log_metrics("validation", metrics)
            self.last_validation = metrics
            value = self._searcher_value(metrics)
            p.last_searcher_metric = value
            policy = self.s.checkpoint_policy
            save = policy == "all" or (policy == "best" and self._is_best(p.batches_trained))
        p.last_searcher_metric = self.dist.broadcast(p.last_searcher_metric)
        if self.dist.broadcast(save) and not self._checkpoint_current():
            self._checkpoint()
        self._set_status("training")

    def _is_best(self, steps_completed: int) -> bool:
        """Whether the validation just reported beat the experiment's best before it: the
        master says so in its reply (no answer, or no master: nothing to beat, so it is)."""
        if not self.s.on_cluster:
            return True
        return self.core.train._is_best_validation(steps_completed) is not False

    def _searcher_value(self, metrics: dict[str, Any]) -> Any:
        name = self.s.searcher_metric
        if name is None:
            return None
        if name not in metrics:
            raise RuntimeError(
                f"searcher.metric {name!r} is not among the validation metrics "
                f"({', '.join(sorted(metrics))}); return it from evaluate_batch/evaluate_full_dataset"
            )
        value = metrics[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise RuntimeError(f"searcher.metric {name!r} must be a number, got {value!r}")
        return value

    # Checkpoints --------------------------------------------------------------------------------

    def _checkpoint(self) -> None:
        p = self.progress
        p.last_ckpt = p.batches_trained
        storage_id = None
        shard = self.s.shard_checkpoints
        if self._chief or shard:
            self._set_status("checkpointing")
            metadata = {"steps_completed": p.batches_trained, **self.strategy.checkpoint_metadata()}
            with self.core.checkpoint.store_path(metadata, shard=shard) as (path, storage_id):
                self.strategy.save(path, self.strategy.capture_rng())
                if self._chief:
                    with (path / TRIAL_STATE).open("wb") as f:
                        pickle.dump(p.state_dict(), f)
                    self._cb("on_checkpoint_end", str(path))
                    self._cb("on_checkpoint_write_end", str(path))
        storage_id = self.dist.broadcast(storage_id)
        self.last_checkpoint = storage_id
        self._cb("on_checkpoint_upload_end", storage_id)
        self._set_status("training")

    def _restore(self, storage_id: str) -> dict[str, Any] | None:
        """Load a checkpoint; returns its RNG state when it continues this trial."""
        with self.core.checkpoint.restore_path(storage_id) as path:
            rng = self.strategy.load(path)
            state = read_trial_state(path)
        if state is None:
            raise RuntimeError(
                f"checkpoint {storage_id} has no {TRIAL_STATE}: it was not written by a Trial "
                "harness and cannot be resumed (use load_trial_from_checkpoint_path for weights)"
            )
        if not self._continues(state):
            logger.info("warm start from checkpoint %s (trial %d)", storage_id, state.trial_id)
            return None
        self.progress = state
        self.last_checkpoint = storage_id
        return rng

    def _continues(self, state: Progress) -> bool:
        """This trial's own checkpoint (Determined's rule: same trial id). Under the master a
        warm-start checkpoint comes with steps_completed 0, so one that trained batches but was
        written elsewhere by a trial with this id (a copied Determined checkpoint) is not
        continued."""
        if state.trial_id != self.s.trial_id:
            return False
        warm = self.s.on_cluster and self.s.initial_batch == 0 and state.batches_trained > 0
        return not warm
