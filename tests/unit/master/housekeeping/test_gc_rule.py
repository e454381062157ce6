"""The checkpoint GC rule (reference §6 checkpoint_storage), as a pure function: every branch
with expectations computed by hand from Determined's ExperimentCheckpointsToGCRaw."""

from __future__ import annotations

from trialkit.config import SharedFSStorage
from trialkit.master.housekeeping._gc import GCCandidate, GCPolicy, select_for_deletion


def C(
    uuid: str, trial: int, steps: int, metric: float | None, vid: int | None = None
) -> GCCandidate:
    return GCCandidate(uuid, trial, steps, metric, vid if vid is not None else steps, float(steps))


def test_default_policy_keeps_the_trials_best_and_latest() -> None:
    ckpts = [C("c1", 1, 1, 0.5), C("c2", 1, 2, 0.2), C("c3", 1, 3, 0.4)]
    # best (smallest) = c2, latest = c3: only c1 goes.
    assert select_for_deletion(ckpts, GCPolicy()) == ["c1"]


def test_larger_is_better_flips_the_best() -> None:
    ckpts = [C("c1", 1, 1, 0.5), C("c2", 1, 2, 0.2), C("c3", 1, 3, 0.4)]
    # best (largest) = c1, latest = c3: c2 goes.
    assert select_for_deletion(ckpts, GCPolicy(), smaller_is_better=False) == ["c2"]


def test_save_experiment_best_ranks_across_trials() -> None:
    a = [C("a1", 1, 1, 0.1, 1), C("a2", 1, 2, 0.3, 3), C("a3", 1, 3, 0.9, 5)]
    b = [C("b1", 2, 1, 0.2, 2), C("b2", 2, 2, 0.05, 4), C("b3", 2, 3, 0.8, 6)]
    # Experiment order: b2 0.05, a1 0.1 | b1 0.2, a2 0.3, b3 0.8, a3 0.9; no trial best, no latest.
    policy = GCPolicy(save_experiment_best=2, save_trial_best=0, save_trial_latest=0)
    assert select_for_deletion(a + b, policy) == ["a2", "a3", "b1", "b3"]


def test_a_checkpoint_is_kept_when_either_rank_protects_it() -> None:
    a = [C("a1", 1, 1, 0.1, 1), C("a2", 1, 2, 0.3, 3)]
    b = [C("b1", 2, 1, 0.7, 2), C("b2", 2, 2, 0.9, 4)]
    # Experiment best 1: a1. Trial best 1: a1 and b1. Latest 0. Only a2 and b2 have neither.
    policy = GCPolicy(save_experiment_best=1, save_trial_best=1, save_trial_latest=0)
    assert select_for_deletion(a + b, policy) == ["a2", "b2"]


def test_no_metric_means_eligible_whatever_the_ranks() -> None:
    ckpts = [C("c1", 1, 1, None), C("c2", 1, 2, 0.1), C("c3", 1, 3, None)]
    # Keep 5 best: c1 has no metric, so it still goes; c3 is the latest and stays.
    policy = GCPolicy(save_experiment_best=5, save_trial_best=5, save_trial_latest=1)
    assert select_for_deletion(ckpts, policy) == ["c1"]


def test_checkpoints_without_a_metric_rank_last() -> None:
    ckpts = [C("p", 1, 1, None, None), C("q", 1, 2, 5.0)]
    # Nulls first would put q at trial rank 2 and delete it.
    policy = GCPolicy(save_experiment_best=0, save_trial_best=1, save_trial_latest=0)
    assert select_for_deletion(ckpts, policy) == ["p"]
    assert select_for_deletion(ckpts, policy, smaller_is_better=False) == ["p"]


def test_equal_metrics_tie_by_validation_id() -> None:
    ckpts = [C("late", 1, 1, 0.5, vid=7), C("early", 2, 1, 0.5, vid=3)]
    policy = GCPolicy(save_experiment_best=1, save_trial_best=0, save_trial_latest=0)
    assert select_for_deletion(ckpts, policy) == ["late"]


def test_save_trial_latest_counts_by_steps_descending() -> None:
    # Input order is not steps order: ranks come from steps_completed.
    ckpts = [C("s3", 1, 30, None), C("s1", 1, 10, None), C("s4", 1, 40, None), C("s2", 1, 20, None)]
    policy = GCPolicy(save_experiment_best=0, save_trial_best=0, save_trial_latest=2)
    assert select_for_deletion(ckpts, policy) == ["s1", "s2"]


def test_latest_is_counted_per_trial() -> None:
    ckpts = [C("a1", 1, 1, None), C("a2", 1, 2, None), C("b1", 2, 1, None), C("b2", 2, 2, None)]
    assert select_for_deletion(ckpts, GCPolicy(0, 0, 1)) == ["a1", "b1"]


def test_zero_everywhere_deletes_everything() -> None:
    ckpts = [C("a1", 1, 1, 0.1), C("a2", 1, 2, None)]
    assert select_for_deletion(ckpts, GCPolicy(0, 0, 0)) == ["a1", "a2"]


def test_warm_start_sources_are_never_deleted() -> None:
    ckpts = [C("c1", 1, 1, 0.5), C("c2", 1, 2, 0.2), C("c3", 1, 3, 0.4)]
    assert select_for_deletion(ckpts, GCPolicy(0, 0, 0), protected={"c1", "c3"}) == ["c2"]


def test_nothing_to_collect() -> None:
    assert select_for_deletion([], GCPolicy()) == []


def test_policy_of_a_storage_config_takes_defaults_for_missing_keys() -> None:
    assert GCPolicy.of(None) == GCPolicy(0, 1, 1)
    storage = {"type": "shared_fs", "host_path": "/ckpts"}
    assert GCPolicy.of(SharedFSStorage.model_validate(storage)) == GCPolicy(0, 1, 1)
    given = {**storage, "save_trial_best": 3, "save_experiment_best": 2}
    assert GCPolicy.of(SharedFSStorage.model_validate(given)) == GCPolicy(2, 3, 1)
