"""The shared loop's decisions about where a run starts and what it tells the master: continue a
checkpoint or warm-start from it, skip the step-zero validation the master already has, save
after every validation off-cluster with ``checkpoint_policy: best``, and the status line."""

from __future__ import annotations

import dataclasses
import json
import logging
import pickle
from pathlib import Path
from typing import Any

import pytest

from tests.unit.harness.test_harness_loop import (
    CountingStrategy,
    ScriptedValidation,
    _only_trial,
    _settings,
    trial_under_master,
)
from trialkit import core
from trialkit.contract import local_runs_dir, read_entries
from trialkit.harness import Batch, LoopSettings, Target, TrainLoop
from trialkit.harness._progress import TRIAL_STATE, Progress
from trialkit.store import NewMetric


def _checkpoint_of_trial_1(stop_at: int) -> str:
    """A checkpoint trial 1 wrote after ``stop_at`` batches (its data-order seed: 5)."""
    settings = _settings()
    settings.trial_id = 1
    with core.init() as ctx:
        loop = TrainLoop(ctx, CountingStrategy(stop_at=stop_at, seed=5), settings)
        loop.run([Target(Batch(12))])
    assert loop.last_checkpoint is not None
    return loop.last_checkpoint


@pytest.mark.parametrize(
    ("trial_id", "on_cluster", "initial_batch", "stop_at", "continues"),
    [
        (1, False, 0, 7, True),  # its own checkpoint, off-cluster
        (2, False, 0, 7, False),  # another trial's checkpoint: a warm start
        (1, True, 7, 7, True),  # under the master, resumed at the batch it reached
        (1, True, 0, 7, False),  # under the master, handed over as a warm start (steps 0)
        (1, True, 0, 1, False),  # the same after a single batch
    ],
)
def test_a_checkpoint_is_continued_only_by_its_own_trial_at_its_own_batch(
    trialkit_home: Path,
    trial_id: int,
    on_cluster: bool,
    initial_batch: int,
    stop_at: int,
    continues: bool,
) -> None:
    checkpoint = _checkpoint_of_trial_1(stop_at)
    settings = _settings()
    settings.trial_id, settings.on_cluster, settings.initial_batch = (
        trial_id,
        on_cluster,
        initial_batch,
    )
    strategy = CountingStrategy(seed=9)
    with core.init() as ctx:
        TrainLoop(ctx, strategy, settings).run([Target(Batch(12))], latest_checkpoint=checkpoint)
    assert strategy.total >= sum(range(stop_at))  # the weights are loaded either way
    if continues:  # the same data order, from the next batch on
        assert (strategy.data_seed, strategy.skip) == (5, stop_at)
    else:  # a new data order from batch 0
        assert (strategy.data_seed, strategy.skip) == (9, 0)
        assert strategy.trained == list(range(12))


def test_a_warm_start_says_so_in_the_log(
    trialkit_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    checkpoint = _checkpoint_of_trial_1(3)
    settings = _settings()
    settings.trial_id = 2
    with core.init() as ctx, caplog.at_level(logging.INFO, logger="trialkit.harness"):
        TrainLoop(ctx, CountingStrategy(), settings).run(
            [Target(Batch(4))], latest_checkpoint=checkpoint
        )
    assert f"warm start from checkpoint {checkpoint} (trial 1)" in [
        r.getMessage() for r in caplog.records
    ]


def test_a_checkpoint_at_batch_0_is_continued_under_the_master(trialkit_home: Path) -> None:
    """Nothing was trained, so nothing tells it from a warm start: it keeps its data order."""
    with core.init() as ctx:
        with ctx.checkpoint.store_path({"steps_completed": 0}) as (path, checkpoint):
            (path / "state.json").write_text(json.dumps({"total": 0, "rng": {"random": []}}))
            with (path / TRIAL_STATE).open("wb") as f:
                pickle.dump(Progress(trial_id=1, shuffle_seed=11).state_dict(), f)
    settings = _settings()
    settings.trial_id, settings.on_cluster = 1, True
    strategy = CountingStrategy(seed=9)
    with core.init() as ctx:
        TrainLoop(ctx, strategy, settings).run([Target(Batch(2))], latest_checkpoint=checkpoint)
    assert (strategy.data_seed, strategy.skip) == (11, 0)


def _validating_every_2_batches(**fields: Any) -> LoopSettings:
    """Validation every 2 batches; checkpoints and reports only when something else asks."""
    return dataclasses.replace(
        _settings(), validation_period=Batch(2), checkpoint_period=Batch(100),
        reporting_period=Batch(100), **fields
    )  # fmt: skip


def _statuses(home: Path, earlier: frozenset[Path] = frozenset()) -> list[str]:
    """The status lines the one local run not in ``earlier`` recorded, in order."""
    [journal] = set(local_runs_dir(home).iterdir()) - earlier
    entries, _ = read_entries(journal)
    return [e["fields"]["status"] for _, e in entries if "status" in e.get("fields", {})]


def test_off_cluster_policy_best_saves_after_every_validation_and_statuses_change_once(
    trialkit_home: Path,
) -> None:
    # no master: nothing to beat, every validation is the best
    settings = _validating_every_2_batches(checkpoint_policy="best")
    with core.init() as ctx:
        TrainLoop(ctx, CountingStrategy(), settings).run([Target(Batch(4))])
        statuses = _statuses(trialkit_home)
    _, checkpoints = _only_trial(trialkit_home)
    assert sorted(c.steps_completed for c in checkpoints) == [2, 4]
    # each change told once: "training" again after the checkpoint a validation triggered is not
    assert statuses == ["validating", "checkpointing", "training"] * 2 + [""]


# The step of a validation an earlier run of the trial reported (None: there was none); 0 is
# its own step-zero validation, which a restart before the first checkpoint must not repeat.
@pytest.mark.parametrize("earlier", [None, 0, 1])
def test_step_zero_validation_is_skipped_when_the_master_has_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, earlier: int | None
) -> None:
    settings = _validating_every_2_batches(
        searcher_metric="loss", step_zero_validation=True, on_cluster=True, trial_id=1
    )
    with trial_under_master(tmp_path, monkeypatch) as (api, trial_id):
        if earlier is not None:
            done = NewMetric(trial_id=trial_id, group="validation", steps_completed=earlier,
                             values={"loss": 0.5}, run_id=0)  # fmt: skip
            api.store.add_metrics([done])
        strategy = ScriptedValidation([0.7, 0.6])
        with core.init() as ctx:
            TrainLoop(ctx, strategy, settings).run([Target(Batch(2))])
    assert strategy.validated_at == ([0, 2] if earlier is None else [2])


def test_a_run_with_nothing_left_to_do_tells_no_status(trialkit_home: Path) -> None:
    with core.init() as ctx:
        done = TrainLoop(ctx, CountingStrategy(), _settings())
        done.run([Target(Batch(4))])
    first = frozenset(local_runs_dir(trialkit_home).iterdir())
    with core.init() as ctx:
        TrainLoop(ctx, CountingStrategy(), _settings()).run(
            [Target(Batch(4))], latest_checkpoint=done.last_checkpoint
        )
        assert _statuses(trialkit_home, first) == []
