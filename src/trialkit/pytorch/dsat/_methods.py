"""The three dsat search methods as custom searchers: a profiling trial first, then ZeRO stage
× micro-batch size. ``binary``: a binary search over the micro-batch of each random config;
``random``: random configs, a randomised narrowing of each, early-stopped by what other trials
showed; ``asha``: binary searches as ASHA's resource (trials per lineage), the best promoted."""

from __future__ import annotations

import abc
import argparse
import copy
import json
import logging
import pathlib
import pickle
import random
import uuid
from collections.abc import Mapping
from typing import Any

from ...searcher import Close, ExitedReason, Operation, SearcherState, SearchMethod, Shutdown
from . import _defaults
from ._dsconfig import random_zero_config
from ._trials import DSATModelProfileInfoTrial, DSATSearchData, DSATTrial, DSATTrialTracker, option

logger = logging.getLogger("trialkit.dsat")

_STATE_FILE = "dsat_state.pkl"


class BaseDSATSearchMethod(SearchMethod):
    """Runs the profiling trial, then asks the subclass for the next trials after each result;
    keeps ``max_trials``/``max_concurrent_trials``/``max_slots`` and writes the best config."""

    def __init__(
        self, args: argparse.Namespace | Mapping[str, Any], exp_config: Mapping[str, Any]
    ) -> None:
        self.args = args
        self.exp_config = exp_config
        self.trial_tracker = DSATTrialTracker(args, exp_config)
        self.rng = random.Random(int(option(args, "random_seed")))

    # -- what subclasses decide -----------------------------------------------------------------

    @abc.abstractmethod
    def get_trials_after_validation_completed(
        self, searcher_state: SearcherState, last_trial: DSATTrial, metric: Any
    ) -> list[DSATTrial]:
        """Trials to queue after ``last_trial`` reported (the profiling trial included)."""

    @abc.abstractmethod
    def get_trials_after_early_exit(
        self, searcher_state: SearcherState, last_trial: DSATTrial, exited_reason: ExitedReason
    ) -> list[DSATTrial]:
        """Trials to queue after ``last_trial`` failed (usually out of memory)."""

    def choose_next_trial_from_queue(self) -> DSATTrial:
        return self.trial_tracker.queue.popleft()

    def early_stopping_triggered(self) -> bool:
        return False

    # -- SearchMethod ---------------------------------------------------------------------------

    def initial_operations(self, searcher_state: SearcherState) -> list[Operation]:
        trial = self.trial_tracker.create_model_profile_info_trial()
        self.trial_tracker.queue_and_register_trial(trial)
        self.trial_tracker.queue.popleft()
        trial.running = True
        return trial.create_and_val_ops

    def on_trial_created(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        return []

    def on_validation_completed(
        self, searcher_state: SearcherState, request_id: uuid.UUID, metric: Any, train_length: int
    ) -> list[Operation]:
        tracker = self.trial_tracker
        trial = tracker[request_id]
        tracker.update_trial_metric(trial, metric)
        if isinstance(trial, DSATModelProfileInfoTrial):
            logger.info(
                "dsat: approx. max micro-batch per stage %s", tracker.approx_max_mbs_per_stage
            )
        if not tracker.max_trials_queued and not self.should_shutdown():
            for new in self.get_trials_after_validation_completed(searcher_state, trial, metric):
                tracker.queue_and_register_trial(new)
        return [Close(str(request_id))]

    def on_trial_exited_early(
        self, searcher_state: SearcherState, request_id: uuid.UUID, exited_reason: ExitedReason
    ) -> list[Operation]:
        tracker = self.trial_tracker
        trial = tracker[request_id]
        tracker.report_trial_early_exit(trial)
        if exited_reason != ExitedReason.ERRORED:
            logger.info("dsat: stopping the search, a trial exited with %s", exited_reason.value)
            return [Shutdown(failure=tracker.should_be_failure)]
        if not tracker.max_trials_queued and not self.should_shutdown():
            for new in self.get_trials_after_early_exit(searcher_state, trial, exited_reason):
                tracker.queue_and_register_trial(new)
        return []

    def on_trial_closed(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        tracker = self.trial_tracker
        if self.should_shutdown():
            return [Shutdown(failure=tracker.should_be_failure)]
        ops: list[Operation] = []
        while tracker.can_run_more_trials:
            trial = self.choose_next_trial_from_queue()
            trial.running = True
            ops += trial.create_and_val_ops
        if not ops and tracker.num_running_trials == 0:
            return [Shutdown(failure=tracker.should_be_failure)]  # nothing left to try
        return ops

    def progress(self, searcher_state: SearcherState) -> float:
        return min(len(searcher_state.trials_closed) / max(self.trial_tracker.max_trials, 1), 1.0)

    def should_shutdown(self) -> bool:
        """The profiling trial failed, early stopping hit, or ``max_trials`` ended."""
        profile = self.trial_tracker.model_profile_info_trial
        if profile is not None and profile.error:
            logger.info(
                "dsat: the profiling trial failed; give a DeepSpeed config that runs with "
                "train_micro_batch_size_per_gpu = 1"
            )
            return True
        if self.early_stopping_triggered():
            logger.info("dsat: early stopping criterion met")
            return True
        return self.trial_tracker.num_completed_trials >= self.trial_tracker.max_trials

    def save_method_state(self, path: pathlib.Path) -> None:
        """The search's state, and ``best_ds_config.json``/``best_ds_metrics.json`` once a trial
        reported (the best DeepSpeed config without its ``autotuning`` section)."""
        with (path / _STATE_FILE).open("wb") as f:
            pickle.dump((self.trial_tracker, self.rng.getstate()), f)
        best = self.trial_tracker.best_trial
        if best is not None:
            config = copy.deepcopy(best.ds_config)
            config.pop("autotuning", None)
            (path / _defaults.BEST_CONFIG_FILE).write_text(json.dumps(config, indent=2))
            (path / _defaults.BEST_METRICS_FILE).write_text(json.dumps(best.metric, indent=2))

    def load_method_state(self, path: pathlib.Path) -> None:
        with (path / _STATE_FILE).open("rb") as f:
            self.trial_tracker, rng_state = pickle.load(f)  # noqa: S301 - our own file
        self.rng.setstate(rng_state)

    # -- helpers for subclasses -----------------------------------------------------------------

    def concurrent_start(self) -> int:
        """How many random configs to start after the profile: the concurrency the limits allow."""
        tracker = self.trial_tracker
        n = min(tracker.max_concurrent_trials, tracker.max_trials)
        if tracker.max_slots is not None:
            n = min(n, tracker.max_slots // tracker.slots_per_trial)
        return max(n, 1)

    def random_hparams(self, stage: int, mbs: int) -> dict[str, Any]:
        """The experiment's hyperparameters with a random ZeRO config of ``stage`` and ``mbs``."""
        hparams = copy.deepcopy(self.trial_tracker.hparams)
        overwrite = hparams.setdefault(_defaults.OVERWRITE_KEY, {})
        overwrite["zero_optimization"] = random_zero_config(stage, self.rng)
        overwrite["train_micro_batch_size_per_gpu"] = mbs
        return hparams

    def initial_range(self, stage: int) -> DSATSearchData:
        """[1, 2·max−1] scaled by ``search_range_factor``: its midpoint is the estimated max."""
        factor = float(option(self.args, "search_range_factor"))
        top = self.trial_tracker.approx_max_mbs_per_stage[stage]
        return DSATSearchData(lo=1, hi=max(int(factor * (2 * top - 1)), 1))

    def random_config_at_estimate(self) -> DSATTrial:
        """A random ZeRO config of a random stage at the midpoint of its initial range."""
        stage = self.rng.choice(self.trial_tracker.zero_stages)
        data = self.initial_range(stage)
        return self.trial_tracker.create_trial(
            self.random_hparams(stage, _midpoint(data)), search_data=data
        )

    def child(self, last: DSATTrial, data: DSATSearchData, mbs: int) -> DSATTrial:
        """The next trial of ``last``'s lineage: same config, micro-batch ``mbs``."""
        hparams = copy.deepcopy(last.hparams)
        hparams[_defaults.OVERWRITE_KEY]["train_micro_batch_size_per_gpu"] = mbs
        return self.trial_tracker.create_trial(hparams, search_data=data, parent_trial=last)


def _midpoint(data: DSATSearchData) -> int:
    return (data.lo + data.hi) // 2


class BinarySearchDSATSearchMethod(BaseDSATSearchMethod):
    """As many random configs as may run at once, each a binary search over the micro-batch
    (up after a success, down after a failure); a finished search is replaced by a new config."""

    def get_trials_after_validation_completed(
        self, searcher_state: SearcherState, last_trial: DSATTrial, metric: Any
    ) -> list[DSATTrial]:
        if isinstance(last_trial, DSATModelProfileInfoTrial):
            return [self.get_random_trial() for _ in range(self.concurrent_start())]
        return [self._narrowed(last_trial, succeeded=True)]

    def get_trials_after_early_exit(
        self, searcher_state: SearcherState, last_trial: DSATTrial, exited_reason: ExitedReason
    ) -> list[DSATTrial]:
        return [self._narrowed(last_trial, succeeded=False)]

    def _narrowed(self, last: DSATTrial, succeeded: bool) -> DSATTrial:
        if last.search_data is None:
            return self.get_random_trial()
        data = copy.deepcopy(last.search_data)
        if succeeded:
            data.lo = last.mbs + 1
        else:
            data.hi = last.mbs - 1
        if data.lo > data.hi:
            return self.get_random_trial()
        return self.child(last, data, _midpoint(data))

    def get_random_trial(self) -> DSATTrial:
        return self.random_config_at_estimate()


class RandomDSATSearchMethod(BaseDSATSearchMethod):
    """Random configs, each narrowed by micro-batches drawn around the middle of its range; a
    lineage stops after ``trials_per_random_config`` trials, on failing at its floor, when a
    same-stage trial already ran its ceiling, or (stage 3) once stage 1 or 2 worked. Stops after
    ``early_stopping`` trials without a new best."""

    def __init__(
        self, args: argparse.Namespace | Mapping[str, Any], exp_config: Mapping[str, Any]
    ) -> None:
        super().__init__(args, exp_config)
        self.trials_per_random_config = int(option(args, "trials_per_random_config"))
        early = option(args, "early_stopping")
        self.early_stopping = None if early is None else int(early)

    def get_trials_after_validation_completed(
        self, searcher_state: SearcherState, last_trial: DSATTrial, metric: Any
    ) -> list[DSATTrial]:
        if isinstance(last_trial, DSATModelProfileInfoTrial):
            return [self.get_random_trial() for _ in range(self.concurrent_start())]
        if last_trial.search_data is None or self.should_stop_lineage(last_trial):
            return [self.get_random_trial()]
        data = copy.deepcopy(last_trial.search_data)
        data.lo = last_trial.mbs + 1
        if data.lo > data.hi:  # the estimate was low: look higher
            data.hi = 2 * data.hi
        return [self.child(last_trial, data, self.draw_mbs(data))]

    def get_trials_after_early_exit(
        self, searcher_state: SearcherState, last_trial: DSATTrial, exited_reason: ExitedReason
    ) -> list[DSATTrial]:
        if last_trial.search_data is None or self.should_stop_lineage(last_trial):
            return [self.get_random_trial()]
        data = copy.deepcopy(last_trial.search_data)
        data.hi = last_trial.mbs - 1
        return [self.child(last_trial, data, self.draw_mbs(data))]

    def choose_next_trial_from_queue(self) -> DSATTrial:
        """Skip (and replace) queued trials a result since queueing made pointless."""
        tracker = self.trial_tracker
        trial = tracker.queue.popleft()
        while self._pointless(trial):
            tracker.queue_and_register_trial(self.get_random_trial())
            trial = tracker.queue.popleft()
        return trial

    def _pointless(self, trial: DSATTrial) -> bool:
        larger_ran = any(
            other.mbs > trial.mbs and other.stage == trial.stage
            for _, other in self.trial_tracker
            if other.searcher_metric_val is not None
        )
        return larger_ran or self.should_stop_lineage(trial)

    def should_stop_lineage(self, trial: DSATTrial) -> bool:
        data = trial.search_data
        if data is None:
            return False
        tracker = self.trial_tracker
        failed_at_floor = trial.error and trial.mbs <= data.lo
        used_up = trial.num_completed_trials_in_lineage >= self.trials_per_random_config
        stage3_pointless = trial.stage == 3 and bool({1, 2} & tracker.successful_stages)
        ceiling_beaten = trial.error_in_direct_history and any(
            other.mbs >= data.hi and other.stage == trial.stage
            for _, other in tracker
            if other.searcher_metric_val is not None
        )
        return failed_at_floor or used_up or stage3_pointless or ceiling_beaten or data.lo > data.hi

    def draw_mbs(self, data: DSATSearchData) -> int:
        """lo + Binomial(hi − lo, ½): anywhere in range, most often near the middle."""
        span = max(data.hi - data.lo, 0)
        return data.lo + sum(self.rng.random() < 0.5 for _ in range(span))

    def get_random_trial(self) -> DSATTrial:
        tracker = self.trial_tracker
        good = sorted({1, 2} & tracker.successful_stages & set(tracker.zero_stages))
        stage = self.rng.choice(good or tracker.zero_stages)
        best = tracker.best_trials_by_stage[stage]
        if best is not None and best.search_data is not None:
            data = DSATSearchData(lo=best.mbs + 1, hi=max(2 * best.mbs, best.search_data.hi))
        else:
            top = tracker.approx_max_mbs_per_stage[stage]
            data = DSATSearchData(lo=1, hi=2 * top - 1)
        return tracker.create_trial(self.random_hparams(stage, self.draw_mbs(data)), data)

    def early_stopping_triggered(self) -> bool:
        return (
            self.early_stopping is not None
            and self.trial_tracker.num_trials_since_best_result >= self.early_stopping
        )


class ASHADSATSearchMethod(BaseDSATSearchMethod):
    """ASHA over random configs whose resource is binary-search trials: rung r lets a lineage
    run ``min_binary_search_trials · divisor^(asha_early_stopping + r)`` trials; the best
    1/divisor of a rung's lineages (by their best metric) are promoted to go on searching."""

    def __init__(
        self, args: argparse.Namespace | Mapping[str, Any], exp_config: Mapping[str, Any]
    ) -> None:
        super().__init__(args, exp_config)
        self.divisor = int(option(args, "divisor"))
        self.max_rungs = int(option(args, "max_rungs"))
        self.min_binary_search_trials = int(option(args, "min_binary_search_trials"))
        self.asha_early_stopping = int(option(args, "asha_early_stopping"))

    def get_trials_after_validation_completed(
        self, searcher_state: SearcherState, last_trial: DSATTrial, metric: Any
    ) -> list[DSATTrial]:
        if isinstance(last_trial, DSATModelProfileInfoTrial):
            return [self.get_random_trial() for _ in range(self.concurrent_start())]
        return [self.get_next_trial(last_trial)]

    def get_trials_after_early_exit(
        self, searcher_state: SearcherState, last_trial: DSATTrial, exited_reason: ExitedReason
    ) -> list[DSATTrial]:
        return [self.get_next_trial(last_trial)]

    def get_next_trial(self, last_trial: DSATTrial) -> DSATTrial:
        """Go on with this lineage within its rung, else promote the best waiting lineage,
        else start a new random config."""
        assert last_trial.search_data is not None
        nxt = None
        if not self.lineage_completed_rung(last_trial, last_trial.search_data.curr_rung):
            nxt = self.next_in_lineage(last_trial)
        if nxt is None:
            promotable = self.next_promotable_lineage()
            if promotable is not None:
                nxt = self.next_in_lineage(promotable)
                if nxt is not None and nxt.search_data is not None:
                    nxt.search_data.curr_rung += 1
        return nxt if nxt is not None else self.get_random_trial()

    def max_trials_for_rung_idx(self, rung_idx: int) -> int:
        return self.min_binary_search_trials * self.divisor ** (self.asha_early_stopping + rung_idx)

    def lineage_completed_rung(self, trial: DSATTrial, rung_idx: int) -> bool:
        latest = trial.latest_in_lineage
        data = latest.search_data
        assert data is not None
        if data.curr_rung > rung_idx:
            return True
        if trial.num_completed_trials_in_lineage >= self.max_trials_for_rung_idx(rung_idx):
            return True
        if data.curr_rung == rung_idx:  # its binary search ended early
            return data.hi <= data.lo or (latest.error and latest.mbs == data.lo)
        return False

    def lineages(self) -> list[DSATTrial]:
        """The latest trial of every search lineage."""
        return [
            t
            for _, t in self.trial_tracker
            if not isinstance(t, DSATModelProfileInfoTrial)
            and t.search_data is not None
            and not t.children
        ]

    def rung(self, rung_idx: int) -> list[DSATTrial]:
        return [t for t in self.lineages() if self.lineage_completed_rung(t, rung_idx)]

    def best_in_lineage(self, trial: DSATTrial, max_rung_idx: int) -> DSATTrial | None:
        return self.trial_tracker.best_of(
            t
            for t in trial.lineage_set
            if t.search_data is not None and t.search_data.curr_rung <= max_rung_idx
        )

    def top_lineages_in_rung(self, rung_idx: int) -> list[DSATTrial]:
        """The best 1/divisor of the lineages that completed ``rung_idx``, best first."""
        done = self.rung(rung_idx)
        k = len(done) // self.divisor
        bests = [b for b in (self.best_in_lineage(t, rung_idx) for t in done) if b is not None]
        bests.sort(
            key=lambda t: t.searcher_metric_val or 0.0,
            reverse=not self.trial_tracker.smaller_is_better,
        )
        return bests[:k]

    def next_promotable_lineage(self) -> DSATTrial | None:
        for rung_idx in reversed(range(self.max_rungs - 1)):
            for best in self.top_lineages_in_rung(rung_idx):
                latest = best.latest_in_lineage
                if latest.search_data is not None and latest.search_data.curr_rung <= rung_idx:
                    return latest
        return None

    def next_in_lineage(self, trial: DSATTrial) -> DSATTrial | None:
        latest = trial.latest_in_lineage
        assert latest.search_data is not None
        data = copy.deepcopy(latest.search_data)
        if latest.searcher_metric_val is not None:
            data.lo = latest.mbs + 1
        else:
            data.hi = latest.mbs - 1
        if data.hi < data.lo:
            return None
        return self.child(latest, data, _midpoint(data))

    def get_random_trial(self) -> DSATTrial:
        return self.random_config_at_estimate()


SEARCH_METHOD_CLASSES: dict[str, type[BaseDSATSearchMethod]] = {
    "binary": BinarySearchDSATSearchMethod,
    "random": RandomDSATSearchMethod,
    "asha": ASHADSATSearchMethod,
}
