"""The trials a dsat search runs (each one DeepSpeed config) and the tracker that holds them:
lineages (one binary search each), results, the best trial, and the queue within the limits."""

from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..._merge import merge_into
from ...searcher import Create, Operation, ValidateAfter
from . import _defaults
from ._dsconfig import batch_config, get_ds_config_from_hparams
from ._profile import ModelProfile


@dataclasses.dataclass
class DSATSearchData:
    """A lineage's micro-batch bounds still to search, and (ASHA) the rung it is in."""

    lo: int
    hi: int
    curr_rung: int = 0


class DSATTrial:
    """One trial: its hyperparameters (with the DeepSpeed overrides), its resulting config, its
    place in a lineage (parent/children) and its outcome."""

    def __init__(
        self,
        hparams: dict[str, Any],
        model_dir: str,
        slots_per_trial: int,
        length: int,
        parent: DSATTrial | None = None,
        search_data: DSATSearchData | None = None,
        searcher_metric_name: str | None = None,
    ) -> None:
        self.hparams = hparams
        self.slots_per_trial = slots_per_trial
        self.length = length
        self.request_id = uuid.uuid4()
        self.parent = parent
        self.search_data = search_data
        self.searcher_metric_name = searcher_metric_name
        self.metric: dict[str, Any] = {}
        self.error = False
        self.running = False
        self.children: list[DSATTrial] = []
        if parent is not None:
            parent.children.append(self)
        self.lineage_root: DSATTrial = self if parent is None else parent.lineage_root
        self.ds_config = get_ds_config_from_hparams(hparams, model_dir)

    def __repr__(self) -> str:
        return f"DSATTrial(stage={self.stage}, mbs={self.mbs}, metric={self.searcher_metric_val})"

    @property
    def completed(self) -> bool:
        return self.error or bool(self.metric)

    @property
    def lineage_set(self) -> list[DSATTrial]:
        """Every trial of this trial's lineage, root first."""
        out, todo = [], [self.lineage_root]
        while todo:
            trial = todo.pop()
            out.append(trial)
            todo.extend(trial.children)
        return out

    @property
    def latest_in_lineage(self) -> DSATTrial:
        trial = self.lineage_root
        while trial.children:
            trial = trial.children[-1]
        return trial

    @property
    def num_completed_trials_in_lineage(self) -> int:
        return sum(t.completed for t in self.lineage_set)

    @property
    def error_in_direct_history(self) -> bool:
        trial: DSATTrial | None = self
        while trial is not None:
            if trial.error:
                return True
            trial = trial.parent
        return False

    @property
    def stage(self) -> int:
        return int(self.ds_config.get("zero_optimization", {}).get("stage", 0))

    @property
    def fp16(self) -> bool:
        return bool(self.ds_config.get("fp16", {}).get("enabled"))

    @property
    def mbs(self) -> int:
        return int(self.ds_config["train_micro_batch_size_per_gpu"])

    @property
    def searcher_metric_val(self) -> float | None:
        if self.searcher_metric_name is None:
            return None
        value = self.metric.get(self.searcher_metric_name)
        return None if value is None else float(value)

    @property
    def create_and_val_ops(self) -> list[Operation]:
        """Create the trial and have it run ``length`` batches, then report."""
        return [
            Create(str(self.request_id), self.hparams, None),
            ValidateAfter(str(self.request_id), self.length),
        ]


class DSATModelProfileInfoTrial(DSATTrial):
    """The first trial: DeepSpeed's model-info profile at micro-batch 1."""


def option(args: Any, name: str) -> Any:
    """A dsat option from an argparse Namespace or a mapping, else its default."""
    if isinstance(args, Mapping):
        value = args.get(name)
    else:
        value = getattr(args, name, None)
    return _defaults.ARG_DEFAULTS.get(name) if value is None else value


class DSATTrialTracker:
    """Every trial of the search, the queue of trials waiting to run, and the limits
    (``max_trials`` counts the profiling trial; ``max_concurrent_trials``; ``max_slots``)."""

    def __init__(self, args: argparse.Namespace | Mapping[str, Any], exp_config: Mapping[str, Any]):
        self.exp_config = exp_config
        self.max_trials = int(option(args, "max_trials"))
        self.max_concurrent_trials = int(option(args, "max_concurrent_trials"))
        max_slots = option(args, "max_slots")
        self.max_slots = None if max_slots is None else int(max_slots)
        self.model_dir = str(option(args, "model_dir") or ".")
        self.searcher_metric = str(option(args, "metric"))
        self.end_profile_step = int(option(args, "end_profile_step"))
        self.zero_stages = sorted(set(option(args, "zero_stages")))
        self.slots_per_trial = int(exp_config.get("resources", {}).get("slots_per_trial", 1) or 1)
        self.hparams: dict[str, Any] = dict(exp_config.get("hyperparameters", {}))
        self.smaller_is_better = smaller_is_better(self.searcher_metric)
        self.model_profile_info_trial: DSATModelProfileInfoTrial | None = None
        self.num_trials_since_best_result = 0
        self.successful_stages: set[int] = set()
        self._trials: dict[uuid.UUID, DSATTrial] = {}
        self.queue: collections.deque[DSATTrial] = collections.deque()

    def __len__(self) -> int:
        return len(self._trials)

    def __getitem__(self, request_id: uuid.UUID) -> DSATTrial:
        return self._trials[request_id]

    def __iter__(self) -> Iterator[tuple[uuid.UUID, DSATTrial]]:
        return iter(list(self._trials.items()))

    # -- creating -------------------------------------------------------------------------------

    def create_trial(
        self,
        hparams: dict[str, Any],
        search_data: DSATSearchData | None = None,
        parent_trial: DSATTrial | None = None,
    ) -> DSATTrial:
        """A trial of ``hparams`` whose batch sizes agree, long enough for DeepSpeed's autotuning
        profile to end it (it exits in the step after ``end_profile_step``)."""
        self._consistent_batch(hparams)
        return DSATTrial(
            hparams,
            self.model_dir,
            self.slots_per_trial,
            self.end_profile_step + 1,
            parent=parent_trial,
            search_data=search_data,
            searcher_metric_name=self.searcher_metric,
        )

    def create_model_profile_info_trial(self) -> DSATModelProfileInfoTrial:
        hparams = copy.deepcopy(self.hparams)
        overwrite = hparams.setdefault(_defaults.OVERWRITE_KEY, {})
        merge_into(overwrite, _defaults.MODEL_INFO_PROFILE_DS_CONFIG)
        self._consistent_batch(hparams)
        trial = DSATModelProfileInfoTrial(hparams, self.model_dir, self.slots_per_trial, 1)
        self.model_profile_info_trial = trial
        return trial

    def queue_and_register_trial(self, trial: DSATTrial) -> None:
        self._trials[trial.request_id] = trial
        self.queue.append(trial)

    def _consistent_batch(self, hparams: dict[str, Any]) -> None:
        ds_config = get_ds_config_from_hparams(hparams, self.model_dir)
        overwrite = hparams.setdefault(_defaults.OVERWRITE_KEY, {})
        merge_into(overwrite, batch_config(ds_config, self.slots_per_trial))

    # -- results --------------------------------------------------------------------------------

    def update_trial_metric(self, trial: DSATTrial, metric: Any) -> None:
        trial.metric = (
            dict(metric) if isinstance(metric, Mapping) else {self.searcher_metric: metric}
        )
        trial.running = False
        if isinstance(trial, DSATModelProfileInfoTrial):
            return
        self.successful_stages.add(trial.stage)
        if self.best_trial is trial:
            self.num_trials_since_best_result = 0
        else:
            self.num_trials_since_best_result += 1

    def report_trial_early_exit(self, trial: DSATTrial) -> None:
        if self.best_trial is not None:
            self.num_trials_since_best_result += 1
        trial.error = True
        trial.running = False

    @property
    def profile(self) -> ModelProfile:
        trial = self.model_profile_info_trial
        if trial is None or not trial.metric:
            raise RuntimeError("the model profile info trial has not reported yet")
        return ModelProfile.from_metrics(trial.metric, fp16=trial.fp16)

    @property
    def approx_max_mbs_per_stage(self) -> dict[int, int]:
        return self.profile.approx_max_mbs(self.slots_per_trial)

    @property
    def mem_per_gpu_per_stage(self) -> dict[int, int]:
        return self.profile.memory_per_stage(self.slots_per_trial)

    def best_of(self, trials: Iterable[DSATTrial]) -> DSATTrial | None:
        """The trial with the best searcher metric (None when none reported it)."""
        scored = [
            t
            for t in trials
            if not isinstance(t, DSATModelProfileInfoTrial) and t.searcher_metric_val is not None
        ]
        if not scored:
            return None
        pick = min if self.smaller_is_better else max
        return pick(scored, key=lambda t: t.searcher_metric_val or 0.0)

    @property
    def best_trials_by_stage(self) -> dict[int, DSATTrial | None]:
        return {s: self.best_of(t for _, t in self if t.stage == s) for s in range(4)}

    @property
    def best_trial(self) -> DSATTrial | None:
        return self.best_of(t for _, t in self)

    # -- limits ---------------------------------------------------------------------------------

    @property
    def num_running_trials(self) -> int:
        return sum(t.running for _, t in self)

    @property
    def num_completed_trials(self) -> int:
        return sum(t.completed for _, t in self)

    @property
    def max_trials_queued(self) -> bool:
        return len(self.queue) >= self.max_trials

    @property
    def should_be_failure(self) -> bool:
        """The search failed: the profile errored, or every search trial that ended errored."""
        profile = self.model_profile_info_trial
        ended = [t for _, t in self if t.completed and not isinstance(t, DSATModelProfileInfoTrial)]
        return bool(profile is not None and profile.error) or all(t.error for t in ended)

    @property
    def can_run_more_trials(self) -> bool:
        if not self.queue:
            return False
        if self.num_running_trials + self.num_completed_trials >= self.max_trials:
            return False
        if self.num_running_trials >= self.max_concurrent_trials:
            return False
        if self.max_slots is not None:
            free = self.max_slots - self.num_running_trials * self.slots_per_trial
            return free >= self.slots_per_trial
        return True


def smaller_is_better(metric: str) -> bool:
    """Whether a smaller value of the dsat ``metric`` is better; ValueError for another name."""
    if metric in _defaults.SMALLER_IS_BETTER_METRICS:
        return True
    if metric in _defaults.LARGER_IS_BETTER_METRICS:
        return False
    names = _defaults.SMALLER_IS_BETTER_METRICS + _defaults.LARGER_IS_BETTER_METRICS
    raise ValueError(f"dsat --metric {metric!r}: expected one of {', '.join(names)}")
