"""The shared loop with no framework at all: a plain-Python strategy gets the same boundaries
(validation, checkpoint, report, stop) and resumes on the next batch from its checkpoint."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.inprocess_master import SINGLE, TOKEN, InProcessMaster, inprocess_master, served
from tests.local_runs import ingested_store
from trialkit import core
from trialkit.config import SearcherConfig
from trialkit.contract._cluster_info import INFO_ENV
from trialkit.errors import InvalidHP
from trialkit.harness import (
    Batch,
    Epoch,
    Hooks,
    LoopSettings,
    SearcherUnits,
    Target,
    TrainLoop,
    searcher_targets,
)
from trialkit.rest import _routes as routes
from trialkit.store import NewMetric


class CountingStrategy:
    """Learns the running mean of the batches it sees; records what the loop asked of it."""

    def __init__(self, stop_at: int | None = None, seed: int = 5) -> None:
        self.total = 0.0
        self.seed = seed
        self.data_seed: int | None = None
        self.trained: list[int] = []
        self.validated_at: list[int] = []
        self.stop_at = stop_at
        self.skip = -1

    def callbacks(self) -> dict[str, Any]:
        return {}

    def use_hooks(self, hooks: Hooks) -> None:
        self.hooks = hooks

    def build_train_iterator(self, skip: int, seed: int) -> tuple[Iterator[Any], int]:
        self.skip, self.data_seed = skip, seed
        return iter(range(skip, 10**6)), 4  # batch i is the number i; 4 batches an epoch

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int) -> Any:
        assert batch == batch_idx  # the data position matches the loop's counter
        self.total += batch
        self.trained.append(batch_idx)
        return {"loss": float(batch)}

    def batch_length(self, batch: Any) -> int:
        return 2

    def reset_reducers(self) -> None:
        pass

    def training_reducer_metrics(self) -> dict[str, Any]:
        return {}

    def metrics_to_python(self, batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return batches  # train_batch returns floats

    def validate(self, test_mode: bool) -> dict[str, Any]:
        self.validated_at.append(len(self.trained))
        return {"total": self.total}

    def stop_requested(self) -> bool:
        return self.stop_at is not None and self.trained[-1] + 1 == self.stop_at

    def save(self, path: Path, rng_state: dict[str, Any]) -> None:
        (path / "state.json").write_text(json.dumps({"total": self.total, "rng": rng_state}))

    def load(self, path: Path) -> dict[str, Any] | None:
        state = json.loads((path / "state.json").read_text())
        self.total = state["total"]
        return dict(state["rng"])

    def training_started(self) -> None:
        pass

    def training_ended(self) -> None:
        pass

    def capture_rng(self) -> dict[str, Any]:
        return {"random": list(random.getstate()[1])}

    def restore_rng(self, state: dict[str, Any]) -> None:
        assert "random" in state

    def fresh_seed(self) -> int:
        return self.seed

    def checkpoint_metadata(self) -> dict[str, Any]:
        return {"framework": "plain-python", "format": "json"}


def _settings() -> LoopSettings:
    return LoopSettings(
        validation_period=Batch(4),
        checkpoint_period=Batch(5),
        reporting_period=Batch(3),
        checkpoint_policy="none",
    )


def test_a_framework_free_strategy_gets_the_loop_boundaries(trialkit_home: Path) -> None:
    strategy = CountingStrategy()
    with core.init() as ctx:
        loop = TrainLoop(ctx, strategy, _settings())
        loop.run([Target(Batch(10))])
    assert strategy.trained == list(range(10))
    assert strategy.validated_at == [4, 8, 10]
    p = loop.progress
    assert (p.batches_trained, p.epochs_trained, p.records_trained) == (10, 2, 20)
    store = ingested_store(trialkit_home)
    try:
        [trial] = store.list_trials()
        training = store.list_metrics(trial.id, "training")
        checkpoints = store.list_checkpoints(trial_id=trial.id)
        timings = store.list_metrics(trial.id, "timings")
    finally:
        store.close()
    assert [m.steps_completed for m in training] == [3, 4, 5, 6, 8, 9, 10]
    assert training[0].values["loss"] == 1.0  # the mean of batches 0, 1, 2
    assert sorted(c.steps_completed for c in checkpoints) == [5, 10]
    assert timings == []  # the profiler is off: nothing timed


class SlowStrategy(CountingStrategy):
    """Fetching a batch takes 20 ms, training on it 5 ms."""

    def build_train_iterator(self, skip: int, seed: int) -> tuple[Iterator[Any], int]:
        batches, epoch_len = super().build_train_iterator(skip, seed)

        def slowly() -> Iterator[Any]:
            for b in batches:
                time.sleep(0.02)
                yield b

        return slowly(), epoch_len

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int) -> Any:
        time.sleep(0.005)
        return super().train_batch(batch, epoch_idx, batch_idx, epoch_len)


def test_with_the_profiler_on_the_loop_reports_its_timings_per_reporting_period(
    trialkit_home: Path,
) -> None:
    with core.init() as ctx:
        ctx.profiler.on(sampling_interval=60)  # no system sample comes in this test's time
        TrainLoop(ctx, SlowStrategy(), _settings()).run([Target(Batch(10))])
        ctx.profiler.off()
    store = ingested_store(trialkit_home)
    try:
        [trial] = store.list_trials()
        training = store.list_metrics(trial.id, "training")
        timings = store.list_metrics(trial.id, "timings")
    finally:
        store.close()
    # one report of each training report, of the batches since the one before
    assert [m.steps_completed for m in timings] == [m.steps_completed for m in training]
    batches = [b - a for a, b in zip([0, 3, 4, 5, 6, 8, 9], [3, 4, 5, 6, 8, 9, 10], strict=True)]
    for report, n in zip(timings, batches, strict=True):
        seconds = report.values["localhost"]
        assert set(seconds) == {"dataloader_next", "train_batch"}
        assert 0.02 * n <= seconds["dataloader_next"] < 0.02 * n + 0.5, (n, seconds)
        assert 0.005 * n <= seconds["train_batch"] < 0.005 * n + 0.5, (n, seconds)


def test_a_stop_request_checkpoints_and_the_next_run_resumes_on_the_next_batch(
    trialkit_home: Path,
) -> None:
    first = CountingStrategy(stop_at=7)
    with core.init() as ctx:
        loop = TrainLoop(ctx, first, _settings())
        loop.run([Target(Batch(12))])
    assert first.trained == list(range(7)) and loop.last_checkpoint is not None
    assert first.data_seed == 5
    second = CountingStrategy(seed=9)  # a resumed run keeps its data order: seed 5, not 9
    with core.init() as ctx:
        resumed = TrainLoop(ctx, second, _settings())
        resumed.run([Target(Batch(12))], latest_checkpoint=loop.last_checkpoint)
    assert second.skip == 7 and second.trained == list(range(7, 12))
    assert second.total == sum(range(12))  # the saved state plus the remaining batches
    assert resumed.progress.batches_trained == 12 and resumed.progress.shuffle_seed == 5
    assert second.data_seed == 5
    done = resumed.last_checkpoint
    with core.init() as ctx:  # resumed when already done: nothing to train, nothing to save
        again = TrainLoop(ctx, CountingStrategy(), _settings())
        again.run([Target(Batch(12))], latest_checkpoint=done)
    assert again.last_checkpoint == done


def _only_trial(home: Path) -> Any:
    store = ingested_store(home)
    try:
        [trial] = store.list_trials()
        return trial, store.list_checkpoints(trial_id=trial.id)
    finally:
        store.close()


@pytest.mark.parametrize(
    ("unit", "max_time", "gbs", "progress"),
    [
        ("batches", 10, None, 6 / 10),  # the last report before the stop at 7 was at batch 6
        ("records", 20, 2, 12 / 20),  # 2 records a batch (CountingStrategy.batch_length)
        ("epochs", 3, None, 6 / 4 / 3),  # 4 batches an epoch
        ("records", 20, 4, 10 / 20),  # 5 batches of 4 are 20 records, but each batch held 2
    ],
)
def test_a_time_metric_search_reports_progress_as_units_trained_over_max_time(
    trialkit_home: Path, unit: str, max_time: int, gbs: int | None, progress: float
) -> None:
    searcher = SearcherConfig.model_validate(
        {"name": "async_halving", "metric": "loss", "time_metric": unit, "max_time": max_time,
         "max_trials": 1, "num_rungs": 2}
    )  # fmt: skip
    with core.init() as ctx:
        loop = TrainLoop(ctx, CountingStrategy(stop_at=7), _settings())
        loop.run(searcher_targets(ctx, searcher, gbs, lambda: loop.epoch_len))
    trial, _ = _only_trial(trialkit_home)
    assert trial.progress == pytest.approx(progress)


def test_a_time_metric_search_progress_never_passes_one(trialkit_home: Path) -> None:
    # 20 records at 1 record a batch (gbs 1) trains 20 batches of 2 records: 40 of 20 done
    searcher = SearcherConfig.model_validate(
        {"name": "async_halving", "metric": "loss", "time_metric": "records", "max_time": 20,
         "max_trials": 1, "num_rungs": 2}
    )  # fmt: skip
    with core.init() as ctx:
        loop = TrainLoop(ctx, CountingStrategy(), _settings())
        loop.run(searcher_targets(ctx, searcher, 1, lambda: loop.epoch_len))
    assert loop.progress.records_trained == 40
    trial, _ = _only_trial(trialkit_home)
    assert trial.progress == 1.0


class RandomStrategy(CountingStrategy):
    """Draws from ``random`` in training and in validation; its RNG state is ``random``'s."""

    def __init__(self) -> None:
        super().__init__()
        self.draws: list[float] = []

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int) -> Any:
        self.draws.append(random.random())  # a dropout mask, a shuffle
        return super().train_batch(batch, epoch_idx, batch_idx, epoch_len)

    def validate(self, test_mode: bool) -> dict[str, Any]:
        [random.random() for _ in range(3)]  # validation-time augmentation
        return super().validate(test_mode)

    def capture_rng(self) -> dict[str, Any]:
        version, internal, gauss = random.getstate()
        return {"random": [version, list(internal), gauss]}

    def restore_rng(self, state: dict[str, Any]) -> None:
        version, internal, gauss = state["random"]
        random.setstate((version, tuple(internal), gauss))


def test_validation_does_not_move_the_training_rng(trialkit_home: Path) -> None:
    def training_draws(validation_period: int) -> list[float]:
        random.seed(1234)
        strategy = RandomStrategy()
        settings = LoopSettings(
            validation_period=Batch(validation_period),
            checkpoint_period=Batch(100),
            reporting_period=Batch(100),
            checkpoint_policy="none",
        )
        with core.init() as ctx:
            TrainLoop(ctx, strategy, settings).run([Target(Batch(8))])
        assert strategy.validated_at[-1] == 8
        return strategy.draws

    rarely = training_draws(100)  # validates once, at the end
    often = training_draws(2)  # validates after every second batch
    assert len(often) == 8 and often == rarely


class PreemptedStrategy(CountingStrategy):
    """The process gets SIGTERM (what the master sends a trial it preempts) in ``at``'s batch."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int) -> Any:
        if batch_idx == self.at:
            os.kill(os.getpid(), signal.SIGTERM)  # PreemptContext's handler: should_preempt()
        return super().train_batch(batch, epoch_idx, batch_idx, epoch_len)


def test_preemption_checkpoints_at_the_next_batch_boundary_and_stops(trialkit_home: Path) -> None:
    strategy = PreemptedStrategy(at=5)
    with core.init() as ctx:
        loop = TrainLoop(ctx, strategy, _settings())
        loop.run([Target(Batch(12))])
    assert strategy.trained == list(range(6))  # batch 5 finished, nothing after it
    assert strategy.validated_at == [4]  # no validation at the stop
    trial, checkpoints = _only_trial(trialkit_home)
    assert sorted(c.steps_completed for c in checkpoints) == [5, 6]  # period 5, then the stop
    assert loop.progress.last_ckpt == 6 and loop.last_checkpoint is not None
    store = ingested_store(trialkit_home)
    try:
        training = store.list_metrics(trial.id, "training")
    finally:
        store.close()
    assert training[-1].steps_completed == 6  # the batches since the last report are reported
    resumed = CountingStrategy()
    with core.init() as ctx:
        TrainLoop(ctx, resumed, _settings()).run(
            [Target(Batch(12))], latest_checkpoint=loop.last_checkpoint
        )
    assert resumed.skip == 6 and resumed.trained == list(range(6, 12))


@contextmanager
def trial_under_master(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[InProcessMaster, int]]:
    """Experiment 1's trial 1 on a master served on loopback; ``core.init()`` then connects to
    it as a launched trial does (cluster info file, HTTP backend)."""
    with inprocess_master(home / "master") as api, served(api.app) as url:
        exp_id = api.create(
            {**SINGLE, "checkpoint_storage": {"type": "shared_fs", "host_path": str(home / "ck")}}
        )
        [trial] = api.store.list_trials(exp_id)
        exp = api.store.get_experiment(exp_id)
        info = {
            "master_url": url,
            "session_token": TOKEN,
            "trial": {"trial_id": trial.id, "experiment_id": exp_id, "trial_seed": trial.seed,
                      "config": exp.config, "trial_run_id": trial.run_id},
        }  # fmt: skip
        (home / "cluster_info.json").write_text(json.dumps(info))
        monkeypatch.setenv(INFO_ENV, str(home / "cluster_info.json"))
        try:
            yield api, trial.id
        finally:  # ends the trial's preemption long poll at once (it would hold the server)
            api.call("POST", routes.SHUTDOWN)


class ScriptedValidation(CountingStrategy):
    """Validates to the next loss of ``losses``."""

    def __init__(self, losses: list[float]) -> None:
        super().__init__()
        self.losses = list(losses)

    def validate(self, test_mode: bool) -> dict[str, Any]:
        super().validate(test_mode)
        return {"loss": self.losses.pop(0)}


@pytest.mark.parametrize(
    ("earlier_best", "saved_at"),
    [
        (None, [2, 4, 8, 10]),  # the first validation is the experiment's best so far
        (0.5, [4, 8, 10]),  # 0.7 is worse than the master's 0.5
    ],
)
def test_checkpoint_policy_best_under_the_master_saves_only_after_a_better_validation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, earlier_best: float | None, saved_at: list[int]
) -> None:
    settings = LoopSettings(
        validation_period=Batch(2),
        checkpoint_period=Batch(100),
        reporting_period=Batch(100),
        checkpoint_policy="best",
        searcher_metric="loss",
        on_cluster=True,
        trial_id=1,
    )
    with trial_under_master(tmp_path, monkeypatch) as (api, trial_id):
        if earlier_best is not None:  # reported before this process started
            best = NewMetric(trial_id=trial_id, group="validation", steps_completed=1,
                             values={"loss": earlier_best}, run_id=0)  # fmt: skip
            api.store.add_metrics([best])
        strategy = ScriptedValidation([0.7, 0.4, 0.4, 0.3, 0.9])
        with core.init() as ctx:
            TrainLoop(ctx, strategy, settings).run([Target(Batch(10))])
        saved = sorted(c.steps_completed for c in api.store.list_checkpoints(trial_id=trial_id))
    assert strategy.validated_at == [2, 4, 6, 8, 10]
    # after each new best (0.4, then 0.3), never after one no better (0.4 again, 0.9); the end
    # of training always checkpoints (10)
    assert saved == saved_at


def test_searcher_units_turn_lengths_into_loop_lengths() -> None:
    assert SearcherUnits("batches", None).length(5) == Batch(5)
    assert SearcherUnits("records", 4).length(10) == Batch(2)  # 10 records of 4 a batch
    assert SearcherUnits("epochs", None).length(3) == Epoch(3)
    with pytest.raises(ValueError, match="^a searcher length in records needs hyperparameters"):
        SearcherUnits("records", None)
    with pytest.raises(ValueError, match="^searcher unit 'steps': a Trial harness trains in"):
        SearcherUnits("steps", 4)


@pytest.mark.parametrize(
    ("searcher", "message"),
    [
        ({"name": "single", "metric": "loss", "max_length": 10},
         r"^searcher.max_length: 10 has no unit; write \{batches: 10\}"),
        ({"name": "single", "metric": "loss"},
         r"^fit\(max_length=...\) must be set: the experiment config has neither searcher.max_length "
         r"nor searcher.time_metric \+ max_time$"),
    ],
)  # fmt: skip
def test_searcher_targets_refuse_a_length_they_cannot_train_to(
    trialkit_home: Path, searcher: dict[str, Any], message: str
) -> None:
    with core.init() as ctx, pytest.raises(ValueError, match=message):
        searcher_targets(ctx, SearcherConfig.model_validate(searcher), None, lambda: 4)


@pytest.mark.parametrize(
    ("unit", "gbs", "batches", "progress"),
    [("records", 4, 1, 1.0), ("epochs", None, 4, 1.0), ("batches", None, 1, 1.0)],
)
def test_operation_targets_train_to_the_length_in_the_searchers_unit(
    trialkit_home: Path, unit: str, gbs: int | None, batches: int, progress: float
) -> None:
    # off-cluster the searcher has one operation of length 1 (as Determined's): 1 record of 4
    # a batch is still a batch, 1 epoch is 4 batches (CountingStrategy's epoch)
    searcher = SearcherConfig.model_validate(
        {"name": "single", "metric": "loss", "max_length": {unit: 5}}
    )
    strategy = CountingStrategy()
    with core.init() as ctx:
        loop = TrainLoop(ctx, strategy, _settings())
        loop.run(searcher_targets(ctx, searcher, gbs, lambda: loop.epoch_len))
        assert list(ctx.searcher.operations()) == []  # the operation was reported completed
    assert strategy.trained == list(range(batches))
    trial, _ = _only_trial(trialkit_home)
    assert trial.progress == progress


class InvalidAt(CountingStrategy):
    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int) -> Any:
        if batch_idx == 6:
            raise InvalidHP("lr too large")
        return super().train_batch(batch, epoch_idx, batch_idx, epoch_len)


def test_invalid_hp_checkpoints_what_was_trained_and_is_raised(trialkit_home: Path) -> None:
    with core.init() as ctx:
        loop = TrainLoop(ctx, InvalidAt(), _settings())
        with pytest.raises(InvalidHP):
            loop.run([Target(Batch(12))])
    _, checkpoints = _only_trial(trialkit_home)
    assert sorted(c.steps_completed for c in checkpoints) == [5, 6]


def test_step_zero_validation_test_mode_and_the_searcher_metric_reached(
    trialkit_home: Path,
) -> None:
    reached: list[Any] = []
    settings = _settings()
    settings.step_zero_validation, settings.searcher_metric = True, "total"
    strategy = CountingStrategy()
    with core.init() as ctx:
        TrainLoop(ctx, strategy, settings).run([Target(Batch(3), reached=reached.append)])
    assert strategy.validated_at == [0, 3] and reached == [0 + 1 + 2]
    settings.test_mode = True  # one batch, whatever the target
    quick = CountingStrategy()
    with core.init() as ctx:
        TrainLoop(ctx, quick, settings).run([Target(Batch(3))])
    assert quick.trained == [0]


def test_resuming_a_checkpoint_no_trial_harness_wrote_says_so(trialkit_home: Path) -> None:
    with core.init() as ctx:
        with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, storage_id):
            (path / "state.json").write_text(json.dumps({"total": 0, "rng": {}}))
        with pytest.raises(RuntimeError, match=f"^checkpoint {storage_id} has no trial_state.pkl: "
                           "it was not written by a Trial harness and cannot be resumed"):  # fmt: skip
            TrainLoop(ctx, CountingStrategy(), _settings()).run(
                [Target(Batch(3))], latest_checkpoint=storage_id
            )
