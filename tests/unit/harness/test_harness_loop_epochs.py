"""What the shared loop hands a strategy batch by batch: epoch and batch indices, epoch hooks,
reducer resets once a report took the batches, records counted per batch, epoch boundaries and
the local progress bar."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.local_runs import ingested_store
from tests.unit.harness.test_harness_loop import CountingStrategy, _only_trial, _settings
from trialkit import core
from trialkit.harness import Batch, Epoch, LoopSettings, Target, TrainLoop
from trialkit.harness._progress import Progress


class _HookLog:
    """A callback that records every hook fired at it, with the batches trained by then."""

    def __init__(self, strategy: EpochRecorder) -> None:
        self._strategy = strategy

    def __getattr__(self, hook: str) -> Any:
        s = self._strategy
        if hook in ("on_checkpoint_end", "on_checkpoint_write_end"):  # (hook, path written?)
            return lambda path: s.hook_calls.append((hook, (Path(path) / "state.json").is_file()))
        return lambda *args: s.hook_calls.append((hook, *args, len(s.trained)))


class EpochRecorder(CountingStrategy):
    """Batch ``i`` holds ``1 + i % 3`` records; records train_batch's arguments, the epoch
    hooks and when the reducers were reset (as batches trained so far)."""

    def __init__(self) -> None:
        super().__init__()
        self.hook_calls: list[tuple[Any, ...]] = []
        self.batch_args: list[tuple[int, int, int]] = []
        self.resets: list[int] = []
        self.test_modes: list[bool] = []

    def callbacks(self) -> dict[str, Any]:
        return {"log": _HookLog(self)}

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int) -> Any:
        self.batch_args.append((epoch_idx, batch_idx, epoch_len))
        return super().train_batch(batch, epoch_idx, batch_idx, epoch_len)

    def batch_length(self, batch: Any) -> int:
        return 1 + batch % 3

    def reset_reducers(self) -> None:
        self.resets.append(len(self.trained))

    def validate(self, test_mode: bool) -> dict[str, Any]:
        self.test_modes.append(test_mode)
        self.hooks.fire("on_validation_start")  # a strategy fires its own hooks via the loop's
        return super().validate(test_mode)


def _every_2_epochs() -> LoopSettings:
    """Validation every second epoch; checkpoints and reports only when something else asks."""
    return dataclasses.replace(
        _settings(), validation_period=Epoch(2), checkpoint_period=Batch(100),
        reporting_period=Batch(100),
    )  # fmt: skip


@pytest.mark.parametrize("profiling", [False, True])
def test_each_batch_knows_its_epoch_and_epochs_bound_validations(
    trialkit_home: Path, profiling: bool
) -> None:
    strategy = EpochRecorder()
    with core.init() as ctx:
        if profiling:  # the timed path through a batch
            ctx.profiler.on(sampling_interval=60)
        loop = TrainLoop(ctx, strategy, _every_2_epochs())
        loop.run([Target(Batch(10))])
        ctx.profiler.off()
    assert strategy.batch_args == [(i // 4, i, 4) for i in range(10)]  # 4 batches an epoch
    epoch_hooks = [c for c in strategy.hook_calls if c[0].startswith("on_training_epoch")]
    assert epoch_hooks == [  # (hook, epoch, batches trained when it fired)
        ("on_training_epoch_start", 0, 0),
        ("on_training_epoch_end", 0, 4),
        ("on_training_epoch_start", 1, 4),
        ("on_training_epoch_end", 1, 8),
        ("on_training_epoch_start", 2, 8),
    ]
    assert strategy.validated_at == [8, 10]  # every second epoch's end, then the target
    assert strategy.test_modes == [False, False]
    assert [c for c in strategy.hook_calls if c[0] == "on_validation_start"] == [
        ("on_validation_start", 8),
        ("on_validation_start", 10),
    ]
    lifecycle = ("on_trial_startup", "on_training_start", "on_training_workload_end",
                 "on_trial_shutdown")  # fmt: skip
    assert [c for c in strategy.hook_calls if c[0] in lifecycle] == [
        ("on_trial_startup", 0, None, 0),  # (initial batch, checkpoint to resume)
        ("on_training_start", 0),
        ("on_training_workload_end", {"loss": 3.5}, [{"loss": float(i)} for i in range(8)], 8),
        ("on_training_workload_end", {"loss": 8.5}, [{"loss": 8.0}, {"loss": 9.0}], 10),
        ("on_trial_shutdown", 10),
    ]
    saves = [c for c in strategy.hook_calls if c[0].startswith("on_checkpoint")]
    assert saves == [  # the one checkpoint, at the end: written into the path, then uploaded
        ("on_checkpoint_end", True),
        ("on_checkpoint_write_end", True),
        ("on_checkpoint_upload_end", loop.last_checkpoint, 10),
    ]
    assert loop.last_validation["total"] == sum(range(10)) and loop.last_validation["batches"] == 10
    assert strategy.resets == [0, 8]  # a new reduction once a report took the batches
    assert loop.progress.records_trained == sum(1 + i % 3 for i in range(10))
    assert loop.progress.epochs_trained == 2


def test_the_progress_bar_counts_the_batches_of_the_target_from_where_it_resumed(
    trialkit_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = _every_2_epochs()
    settings.progress_bar = True
    with core.init() as ctx:
        first = TrainLoop(ctx, CountingStrategy(stop_at=3), settings)
        first.run([Target(Batch(6))])
        capsys.readouterr()
        resumed = EpochRecorder()
        TrainLoop(ctx, resumed, settings).run(
            [Target(Batch(6))], latest_checkpoint=first.last_checkpoint
        )
    assert resumed.hook_calls[0] == ("on_trial_startup", 0, first.last_checkpoint, 0)
    err = capsys.readouterr().err
    # validations are printed above the bar (at the end of the target: total 0+1+...+5); the
    # bar shows the latest metrics, training reports only there
    first_line, bar = err.splitlines()
    assert first_line == "[batch 6] validation: total=15"
    assert bar.startswith("training") and "6/6 batches" in bar and bar.endswith("total=15")


def test_training_reports_carry_batches_epochs_records_and_each_batch(
    trialkit_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with core.init() as ctx, caplog.at_level(logging.INFO, logger="trialkit.harness"):
        TrainLoop(ctx, CountingStrategy(), _settings()).run([Target(Batch(10))])
    store = ingested_store(trialkit_home)
    try:
        [trial] = store.list_trials()
        training = store.list_metrics(trial.id, "training")
        validation = store.list_metrics(trial.id, "validation")
        per_batch = store.list_batch_metrics(trial.id)
    finally:
        store.close()
    assert [b.batch_metrics for b in per_batch][:2] == [
        [{"loss": 0.0}, {"loss": 1.0}, {"loss": 2.0}],  # batches 0-2, reported at 3
        [{"loss": 3.0}],
    ]
    lines = [r.getMessage() for r in caplog.records]
    assert "[batch 3] training: loss=1" in lines
    assert "[batch 4] validation: total=6" in lines  # 0 + 1 + 2 + 3
    assert [m.steps_completed for m in validation] == [4, 8, 10]
    assert [m.steps_completed for m in training] == [3, 4, 5, 6, 8, 9, 10]
    for m in training + validation:  # 2 records a batch, 4 batches an epoch
        n = m.steps_completed
        assert (m.values["batches"], m.values["epochs"], m.values["records"]) == (n, n // 4, 2 * n)


def test_progress_is_batches_over_the_target_unless_the_target_reports_its_own(
    trialkit_home: Path,
) -> None:
    with core.init() as ctx:  # reports at 3, 4 (validation) and 5 (checkpoint), then stops
        TrainLoop(ctx, CountingStrategy(stop_at=5), _settings()).run([Target(Batch(12))])
    trial, _ = _only_trial(trialkit_home)
    assert trial.progress == pytest.approx(5 / 12)

    seen: list[tuple[int, int]] = []

    def own(p: Progress, total: int) -> None:
        seen.append((p.batches_trained, total))

    with core.init() as ctx:
        TrainLoop(ctx, CountingStrategy(), _settings()).run([Target(Batch(6), report_progress=own)])
    assert seen == [(3, 6), (4, 6), (5, 6), (6, 6)]


def test_a_one_batch_target_is_all_done_after_its_batch(trialkit_home: Path) -> None:
    with core.init() as ctx:
        TrainLoop(ctx, CountingStrategy(), _settings()).run([Target(Batch(1))])
    trial, _ = _only_trial(trialkit_home)
    assert trial.progress == 1.0


def test_policy_all_saves_after_every_validation(trialkit_home: Path) -> None:
    settings = dataclasses.replace(
        _settings(), checkpoint_policy="all", checkpoint_period=Batch(100)
    )
    with core.init() as ctx:
        TrainLoop(ctx, CountingStrategy(), settings).run([Target(Batch(10))])
    _, checkpoints = _only_trial(trialkit_home)
    assert sorted(c.steps_completed for c in checkpoints) == [4, 8, 10]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "searcher.metric 'loss' is not among the validation metrics (batches, epochs,"
               " records, total); return it from evaluate_batch/evaluate_full_dataset"),
        (float("nan"), "searcher.metric 'loss' must be a number, got nan"),
        (True, "searcher.metric 'loss' must be a number, got True"),
        ("low", "searcher.metric 'loss' must be a number, got 'low'"),
    ],
)  # fmt: skip
def test_a_searcher_metric_that_is_missing_or_no_number_is_one_error(
    trialkit_home: Path, value: Any, message: str
) -> None:
    class Reports(CountingStrategy):
        def validate(self, test_mode: bool) -> dict[str, Any]:
            metrics = super().validate(test_mode)
            return metrics if value is None else {**metrics, "loss": value}

    settings = dataclasses.replace(_settings(), searcher_metric="loss")
    with core.init() as ctx, pytest.raises(RuntimeError) as e:
        TrainLoop(ctx, Reports(), settings).run([Target(Batch(4))])
    assert str(e.value) == message


def test_a_loop_that_has_not_run_has_no_validation_and_no_checkpoint(trialkit_home: Path) -> None:
    with core.init() as ctx:
        loop = TrainLoop(ctx, CountingStrategy(), _settings())
        assert (loop.last_validation, loop.last_checkpoint) == ({}, None)


def test_a_stop_request_is_logged_with_its_batch(
    trialkit_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with core.init() as ctx, caplog.at_level(logging.INFO, logger="trialkit.harness"):
        TrainLoop(ctx, CountingStrategy(stop_at=3), _settings()).run([Target(Batch(12))])
    assert "stopping at batch 3: checkpointing" in [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize("reported", [0, 1])
def test_an_epoch_is_at_least_one_batch(trialkit_home: Path, reported: int) -> None:
    class ShortEpochs(CountingStrategy):
        def build_train_iterator(self, skip: int, seed: int) -> tuple[Iterator[Any], int]:
            batches, _ = super().build_train_iterator(skip, seed)
            return batches, reported  # an empty or unknown epoch length counts as 1

    with core.init() as ctx:
        loop = TrainLoop(ctx, ShortEpochs(), _settings())
        loop.run([Target(Batch(3))])
    assert (loop.epoch_len, loop.progress.epochs_trained) == (1, 3)
