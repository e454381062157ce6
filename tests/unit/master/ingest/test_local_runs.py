"""The master's ingest of local-mode runs (issue 34): a run journaled by ``core.init()`` with no
master is stored once, however often the journal is read, whatever a stopped master left behind,
and only line by complete line; an ended run's journal goes and its TensorBoard files take its
ids' place. Real runs (``core.init()``), real files, a real SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from trialkit import core
from trialkit.contract import JournalWriter, journal_path, local_runs_dir
from trialkit.master.ingest import LocalRunIngest, _local_runs
from trialkit.store import ExperimentState, Store, TrialState


@contextmanager
def _ingested(home: Path) -> Iterator[Store]:
    """A fresh ingest, as a master that just started does it; the store it wrote, open."""
    store = Store.at(home)
    try:
        LocalRunIngest(store, home).ingest_all()
        yield store
    finally:
        store.close()


def _counts(store: Store) -> tuple[int, int, int, int]:
    """(experiments, trials, metric reports, checkpoints) in the store."""
    trials = store.list_trials()
    metrics = sum(store.count_metrics(t.id) for t in trials)
    return len(store.list_experiments()), len(trials), metrics, len(store.list_checkpoints())


def _report(ctx: core.Context, step: int) -> None:
    ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _):
        (path / "w").write_text(str(step))
    ctx._shipper.flush()  # on the journal now, as a report is within a second


def test_a_run_ingested_twice_is_stored_once(trialkit_home: Path) -> None:
    with core.init() as ctx:
        _report(ctx, 1)
        _report(ctx, 2)
    with _ingested(trialkit_home) as first:
        assert _counts(first) == (1, 1, 2, 2)
        (exp,) = first.list_experiments()
        assert exp.state is ExperimentState.COMPLETED
    assert list(local_runs_dir(trialkit_home).iterdir()) == []  # stored: the journal is gone
    with _ingested(trialkit_home) as again:
        assert _counts(again) == (1, 1, 2, 2)


def test_runs_are_numbered_in_the_order_they_started(trialkit_home: Path) -> None:
    """As when each run created its own experiment: the master takes journals oldest first."""
    for step in range(1, 6):
        with core.init() as ctx:
            ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0})
    with _ingested(trialkit_home) as store:
        trials = sorted(store.list_trials(), key=lambda t: t.id)
        assert [store.list_metrics(t.id)[0].steps_completed for t in trials] == [1, 2, 3, 4, 5]


def test_a_master_stopped_before_recording_its_progress_stores_nothing_twice(
    trialkit_home: Path,
) -> None:
    with core.init() as ctx:
        _report(ctx, 1)
        journal = journal_path(trialkit_home, ctx._backend.key)  # type: ignore[attr-defined]
        with _ingested(trialkit_home) as first:
            assert _counts(first) == (1, 1, 1, 1)
        # The master stopped after its store writes but before its progress record: the next
        # one reads the journal from the start again.
        journal.with_suffix(".ingested").unlink()
        with _ingested(trialkit_home) as replayed:
            assert _counts(replayed) == (1, 1, 1, 1)
            (trial,) = replayed.list_trials()
            assert trial.state is TrialState.ACTIVE
        _report(ctx, 2)
    with _ingested(trialkit_home) as done:
        assert _counts(done) == (1, 1, 2, 2)
        (trial,) = done.list_trials()
        assert trial.state is TrialState.COMPLETED
        assert [m.steps_completed for m in done.list_metrics(trial.id)] == [1, 2]


def test_a_long_journal_is_stored_a_bounded_read_at_a_time(
    trialkit_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tick reads about READ_LIMIT bytes of a journal (here: one line), so the engine never
    waits long; the rest comes on the next ticks, each entry once."""
    with core.init() as ctx:
        for step in (1, 2, 3):
            _report(ctx, step)
    monkeypatch.setattr(_local_runs, "READ_LIMIT", 1)
    store = Store.at(trialkit_home)
    try:
        ingest = LocalRunIngest(store, trialkit_home)
        calls = 0
        while ingest.ingest():
            calls += 1
        assert calls >= 8  # start, 3 x (metrics, checkpoint), end: one line per call
        assert _counts(store) == (1, 1, 3, 3)
        assert store.list_trials()[0].state is TrialState.COMPLETED
    finally:
        store.close()


def test_a_half_written_last_line_waits_until_it_is_complete(trialkit_home: Path) -> None:
    with core.init() as ctx:
        _report(ctx, 1)
        journal = journal_path(trialkit_home, ctx._backend.key)  # type: ignore[attr-defined]
    complete = journal.read_bytes()
    end = complete.rindex(b"\n", 0, len(complete) - 1) + 1  # where the last line ("end") starts
    journal.write_bytes(complete[: end + 10])  # as a crash mid-write or a writer mid-line leaves it
    with _ingested(trialkit_home) as store:
        (trial,) = store.list_trials()
        assert trial.state is TrialState.ACTIVE  # the cut "end" line is not read
        assert store.count_metrics(trial.id) == 1
        with journal.open("ab") as f:  # the writer finishes its line
            f.write(complete[end + 10 :])
        LocalRunIngest(store, trialkit_home).ingest_all()
        assert store.get_trial(trial.id).state is TrialState.COMPLETED
        assert store.count_metrics(trial.id) == 1


def test_an_ended_runs_tensorboard_files_take_its_ids_place(trialkit_home: Path) -> None:
    with core.init() as ctx:
        ctx.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
        during = ctx.train.get_tensorboard_path()
    events = sorted(p.name for p in during.iterdir())
    assert events, "AUTO mode wrote no event file"
    with _ingested(trialkit_home) as store:
        (trial,) = store.list_trials()
        moved = trialkit_home / "tensorboard" / f"experiment-{trial.experiment_id}"
        assert sorted(p.name for p in (moved / f"trial-{trial.id}").iterdir()) == events
        assert not during.exists()


def test_a_run_whose_experiment_was_deleted_is_dropped(trialkit_home: Path) -> None:
    ctx = core.init()
    _report(ctx, 1)
    with _ingested(trialkit_home) as store:
        (exp,) = store.list_experiments()
        store.delete_experiment_rows(exp.id)
        ctx.close()
        LocalRunIngest(store, trialkit_home).ingest_all()
        assert _counts(store) == (0, 0, 0, 0)
        assert list(local_runs_dir(trialkit_home).iterdir()) == []


def test_entries_before_a_start_are_skipped(trialkit_home: Path) -> None:
    writer = JournalWriter(journal_path(trialkit_home, "f" * 32))
    writer.append("metrics", reports=[{"group": "training", "steps_completed": 1, "metrics": {}}])
    writer.close()
    with _ingested(trialkit_home) as store:
        assert _counts(store) == (0, 0, 0, 0)
