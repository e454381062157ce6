"""Store: domain objects out, NotFound for missing rows, checkpoints by steps, best validation,
logs, WAL mode and concurrent writers (design "Data that must never be lost"; reference §1.9)."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from trialkit.store import (
    Checkpoint,
    Experiment,
    ExperimentState,
    NewMetric,
    NotFound,
    Store,
    StoreError,
    Trial,
    TrialState,
    sqlite_url,
)


def new_trial(store: Store, name: str = "exp") -> Trial:
    exp = store.create_experiment(name=name, config={"searcher": {"name": "single"}})
    return store.create_trial(experiment_id=exp.id, request_id="r1", hparams={"lr": 0.1}, seed=7)


def add_ckpt(store: Store, trial: Trial, uuid: str, steps: int) -> Checkpoint:
    return store.add_checkpoint(
        uuid=uuid,
        trial_id=trial.id,
        experiment_id=trial.experiment_id,
        run_id=1,
        steps_completed=steps,
        metadata={"steps_completed": steps},
        resources={"model.pt": 10},
        storage={"type": "shared_fs", "host_path": "/tmp/x"},
    )


def validation(trial: Trial, steps: int, **values: object) -> NewMetric:
    return NewMetric(trial_id=trial.id, group="validation", steps_completed=steps, values=values)


# Experiments and trials ------------------------------------------------------------------------


def test_experiment_round_trip_returns_frozen_domain_objects(store: Store) -> None:
    exp = store.create_experiment(
        name="mnist",
        config={"searcher": {"name": "single", "metric": "loss"}},
        description="first try",
        labels=["a", "b"],
        model_def=b"tarball",
    )
    got = store.get_experiment(exp.id)
    assert isinstance(got, Experiment)
    assert got == exp
    assert (got.name, got.description, got.labels) == ("mnist", "first try", ["a", "b"])
    assert got.state is ExperimentState.ACTIVE
    assert got.archived is False and got.unmanaged is False and got.ended_at is None
    assert store.get_model_def(exp.id) == b"tarball"
    assert store.get_searcher_state(exp.id) is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.name = "other"  # type: ignore[misc]


def test_update_experiment_accepts_enum_state_and_persists(store: Store) -> None:
    exp = store.create_experiment(name="e", config={})
    updated = store.update_experiment(exp.id, state=ExperimentState.PAUSED, progress=0.5)
    assert updated.state is ExperimentState.PAUSED
    again = store.get_experiment(exp.id)
    assert again.state is ExperimentState.PAUSED and again.progress == 0.5
    store.update_experiment(exp.id, searcher_state={"created": 3})
    assert store.get_searcher_state(exp.id) == {"created": 3}


def test_update_with_unknown_field_is_an_error_not_a_silent_no_op(store: Store) -> None:
    trial = new_trial(store)
    with pytest.raises((TypeError, ValueError, AttributeError, StoreError)):
        store.update_trial(trial.id, stat="PAUSED")  # typo for "state"
    with pytest.raises((TypeError, ValueError, AttributeError, StoreError)):
        store.update_experiment(trial.experiment_id, progres=0.5)


def test_list_experiments_filters_by_archived_and_state(store: Store) -> None:
    a = store.create_experiment(name="a", config={})
    b = store.create_experiment(name="b", config={})
    c = store.create_experiment(name="c", config={}, state=ExperimentState.PAUSED)
    store.update_experiment(b.id, archived=True)
    assert [e.id for e in store.list_experiments()] == [a.id, b.id, c.id]
    assert [e.id for e in store.list_experiments(include_archived=False)] == [a.id, c.id]
    assert [e.id for e in store.list_experiments(states=[ExperimentState.PAUSED])] == [c.id]


def test_missing_rows_raise_not_found(store: Store) -> None:
    with pytest.raises(NotFound, match="experiment 99"):
        store.get_experiment(99)
    with pytest.raises(NotFound, match="trial 42"):
        store.get_trial(42)
    with pytest.raises(NotFound, match="checkpoint nope"):
        store.get_checkpoint("nope")
    with pytest.raises(NotFound):
        store.update_trial(42, status="x")
    with pytest.raises(NotFound):
        store.update_experiment(99, progress=1.0)


def test_trial_for_missing_experiment_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError):
        store.create_trial(experiment_id=12345, request_id="r", hparams={}, seed=0)
    assert store.list_trials() == []  # the failed insert was rolled back


def test_trials_listed_per_experiment_in_creation_order(store: Store) -> None:
    t1 = new_trial(store, "one")
    e2 = store.create_experiment(name="two", config={})
    t2 = store.create_trial(experiment_id=e2.id, request_id="a", hparams={}, seed=1)
    t3 = store.create_trial(experiment_id=e2.id, request_id="b", hparams={}, seed=2)
    assert [t.id for t in store.list_trials()] == [t1.id, t2.id, t3.id]
    assert [t.id for t in store.list_trials(e2.id)] == [t2.id, t3.id]
    updated = store.update_trial(t2.id, state=TrialState.COMPLETED, restarts=2, slots=[0, 1])
    assert updated.state is TrialState.COMPLETED and updated.state.ended
    assert store.get_trial(t2.id).slots == [0, 1]
    assert store.get_trial(t2.id).restarts == 2


def test_store_path_that_cannot_be_opened_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    url = sqlite_url(blocker / "sub" / "trialkit.db")
    with pytest.raises(StoreError, match="cannot open the store"):
        Store(url)


def test_store_made_by_an_older_version_gains_new_nullable_columns(tmp_path: Path) -> None:
    old = Store.at(tmp_path)
    trial = new_trial(old)
    old.close()
    with sqlite3.connect(tmp_path / "trialkit.db") as db:  # as a store from before `error`
        db.execute("ALTER TABLE trials DROP COLUMN error")
        db.execute("DROP TABLE alembic_version")  # and from before migrations
    store = Store.at(tmp_path)
    assert store.get_trial(trial.id).error is None
    assert store.update_trial(trial.id, error="ValueError: boom").error == "ValueError: boom"
    store.close()


# Metrics ---------------------------------------------------------------------------------------


def test_metrics_listed_counted_and_latest_by_group(store: Store) -> None:
    trial = new_trial(store)
    store.add_metrics(
        [
            NewMetric(
                trial_id=trial.id, group="training", steps_completed=10, values={"loss": 1.0}
            ),
            validation(trial, 10, loss=0.9),
            NewMetric(
                trial_id=trial.id, group="training", steps_completed=20, values={"loss": 0.5}
            ),
            validation(trial, 20, loss=0.4),
        ]
    )
    store.add_metrics([])  # no-op
    training = store.list_metrics(trial.id, "training")
    assert [(m.steps_completed, m.values) for m in training] == [
        (10, {"loss": 1.0}),
        (20, {"loss": 0.5}),
    ]
    assert store.count_metrics(trial.id) == 4
    assert store.count_metrics(trial.id, "validation") == 2
    latest = store.latest_metrics(trial.id, "validation")
    assert latest is not None and latest.values == {"loss": 0.4}
    assert store.latest_metrics(trial.id, "profiling") is None
    assert store.last_validation_steps(trial.id) == 20


def test_reported_at_defaults_to_now(store: Store) -> None:
    trial = new_trial(store)
    before = time.time()
    store.add_metrics([validation(trial, 1, loss=1.0)])
    (m,) = store.list_metrics(trial.id)
    assert before - 1 <= m.reported_at <= time.time() + 1


def test_best_validation_honours_direction_and_skips_non_numbers(store: Store) -> None:
    trial = new_trial(store)
    store.add_metrics(
        [
            validation(trial, 1, loss=0.5),
            validation(trial, 2, loss=0.2),
            validation(trial, 3, loss=0.9),
            validation(trial, 4, loss=float("nan")),
            validation(trial, 5, loss="NaN"),
            validation(trial, 6, loss=True),
            validation(trial, 7, acc=0.99),
            NewMetric(trial_id=trial.id, group="training", steps_completed=8, values={"loss": 0.0}),
        ]
    )
    assert store.best_validation(metric="loss", smaller_is_better=True, trial_id=trial.id) == 0.2
    assert store.best_validation(metric="loss", smaller_is_better=False, trial_id=trial.id) == 0.9
    assert (
        store.best_validation(metric="missing", smaller_is_better=True, trial_id=trial.id) is None
    )


@pytest.mark.parametrize("name", ['val "acc"', "top.1", "acc[0]", "it's", "$", 'a\\"b'])
def test_best_validation_of_a_metric_whose_name_needs_quoting(store: Store, name: str) -> None:
    trial = new_trial(store)
    store.add_metrics([validation(trial, 1, **{name: 0.5}), validation(trial, 2, **{name: 0.25})])
    assert store.best_validation(metric=name, smaller_is_better=True, trial_id=trial.id) == 0.25
    (view,) = store.trial_views(metric=name, smaller_is_better=False, trial_id=trial.id)
    assert view.best_validation == 0.5


def test_best_validation_is_scoped_to_an_experiment(store: Store) -> None:
    t1 = new_trial(store, "one")
    t2 = new_trial(store, "two")
    t1b = store.create_trial(experiment_id=t1.experiment_id, request_id="r2", hparams={}, seed=1)
    store.add_metrics([validation(t1, 1, loss=0.3), validation(t1b, 1, loss=0.1)])
    store.add_metrics([validation(t2, 1, loss=0.01)])
    best = store.best_validation(
        metric="loss", smaller_is_better=True, experiment_id=t1.experiment_id
    )
    assert best == 0.1
    assert store.best_validation(metric="loss", smaller_is_better=True, experiment_id=999) is None


def test_nan_strings_survive_as_stored(store: Store) -> None:
    trial = new_trial(store)
    store.add_metrics([validation(trial, 1, loss="NaN", acc="Infinity")])
    (m,) = store.list_metrics(trial.id)
    assert m.values == {"loss": "NaN", "acc": "Infinity"}


# Checkpoints -----------------------------------------------------------------------------------


def test_latest_checkpoint_is_the_one_with_most_steps_not_the_last_reported(store: Store) -> None:
    trial = new_trial(store)
    assert store.latest_checkpoint(trial.id) is None
    add_ckpt(store, trial, "c-200", 200)
    add_ckpt(store, trial, "c-300", 300)
    add_ckpt(store, trial, "c-100", 100)  # reported last, fewer steps
    latest = store.latest_checkpoint(trial.id)
    assert latest is not None and latest.uuid == "c-300"


def test_latest_checkpoint_ignores_deleted_ones(store: Store) -> None:
    trial = new_trial(store)
    add_ckpt(store, trial, "old", 100)
    add_ckpt(store, trial, "new", 200)
    store.set_checkpoint_state("new", "DELETED")
    latest = store.latest_checkpoint(trial.id)
    assert latest is not None and latest.uuid == "old"
    assert store.get_checkpoint("new").state == "DELETED"


def test_latest_checkpoint_tie_goes_to_the_latest_reported(store: Store) -> None:
    trial = new_trial(store)
    add_ckpt(store, trial, "first", 100)
    time.sleep(0.01)
    add_ckpt(store, trial, "second", 100)
    latest = store.latest_checkpoint(trial.id)
    assert latest is not None and latest.uuid == "second"


def test_checkpoint_round_trip_and_listing(store: Store) -> None:
    t1 = new_trial(store, "one")
    t2 = new_trial(store, "two")
    c = add_ckpt(store, t1, "u1", 5)
    add_ckpt(store, t2, "u2", 6)
    got = store.get_checkpoint("u1")
    assert got.metadata == {"steps_completed": 5}
    assert got.resources == {"model.pt": 10}
    assert got.storage["type"] == "shared_fs"
    assert got.state == "COMPLETED" and got.steps_completed == 5 and c.uuid == "u1"
    assert [x.uuid for x in store.list_checkpoints()] == ["u1", "u2"]
    assert [x.uuid for x in store.list_checkpoints(trial_id=t2.id)] == ["u2"]
    assert [x.uuid for x in store.list_checkpoints(experiment_id=t1.experiment_id)] == ["u1"]


def test_reporting_a_checkpoint_twice_updates_it(store: Store) -> None:
    trial = new_trial(store)
    add_ckpt(store, trial, "same", 5)
    add_ckpt(store, trial, "same", 9)
    assert [c.steps_completed for c in store.list_checkpoints(trial_id=trial.id)] == [9]


# Logs ------------------------------------------------------------------------------------------


def test_logs_page_by_id(store: Store) -> None:
    trial = new_trial(store)
    store.add_logs(trial.id, 1, [f"line {i}" for i in range(5)])
    store.add_logs(trial.id, 1, [])
    first = store.list_logs(trial.id, limit=2)
    assert [ln.line for ln in first] == ["line 0", "line 1"]
    rest = store.list_logs(trial.id, after_id=first[-1].id)
    assert [ln.line for ln in rest] == ["line 2", "line 3", "line 4"]
    assert all(ln.run_id == 1 and ln.trial_id == trial.id for ln in rest)


# SQLite specifics ------------------------------------------------------------------------------


def test_sqlite_store_uses_wal_mode(tmp_path: Path) -> None:
    s = Store.at(tmp_path)
    new_trial(s)
    s.close()
    con = sqlite3.connect(tmp_path / "trialkit.db")
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
    finally:
        con.close()


def test_data_survives_reopening(tmp_path: Path) -> None:
    s = Store.at(tmp_path)
    trial = new_trial(s)
    add_ckpt(s, trial, "kept", 3)
    s.close()
    s2 = Store.at(tmp_path)
    try:
        assert s2.get_trial(trial.id).hparams == {"lr": 0.1}
        assert s2.get_checkpoint("kept").steps_completed == 3
    finally:
        s2.close()


def test_concurrent_writers_lose_nothing(store: Store) -> None:
    trial = new_trial(store)
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for i in range(25):
                store.add_metrics(
                    [
                        NewMetric(
                            trial_id=trial.id,
                            group=f"g{worker}",
                            steps_completed=i,
                            values={"i": i},
                        )
                    ]
                )
                store.add_logs(trial.id, 0, [f"{worker}:{i}"])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.count_metrics(trial.id) == 6 * 25
    assert len(store.list_logs(trial.id)) == 6 * 25


def test_unreachable_database_is_one_store_error_without_the_password() -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError) as err:
        Store("postgresql://user:s3cret@127.0.0.1:1/none")
    assert (
        "cannot open the store at postgresql://user:***@127.0.0.1:1/none: OperationalError"
        in str(err.value)
    )
    assert "\n" not in str(err.value)
    assert "s3cret" not in str(err.value)


def test_database_without_its_driver_names_the_url(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"cannot open the store at mysql://x/y: No module"):
        Store("mysql://x/y")


def test_trialkit_db_selects_the_store_for_a_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = sqlite_url(tmp_path / "elsewhere.db")
    monkeypatch.setenv("TRIALKIT_DB", url)
    s = Store.for_home(tmp_path / "home")
    s.close()
    assert s.url == url and (tmp_path / "elsewhere.db").exists()
    assert not (tmp_path / "home" / "trialkit.db").exists()


# --- metric batches: a resend after a lost reply is stored once (issue 12 item 5) -------------


def test_metric_batch_is_stored_once(store: Store) -> None:
    from trialkit.store import MetricBatch

    trial = new_trial(store)
    reports = [
        NewMetric(trial_id=trial.id, group="training", steps_completed=s, values={"loss": 1.0})
        for s in (1, 2, 3)
    ]
    batch = MetricBatch(trial.id, run_id=1, sender="abc", seq=1)
    assert store.add_metrics(reports, batch) is True
    assert store.add_metrics(reports, batch) is False  # the resend: acknowledged, not stored
    assert store.count_metrics(trial.id, "training") == 3
    assert store.metric_batch_stored(batch)
    # Another batch number, sender or run is new data.
    assert store.add_metrics(reports[:1], MetricBatch(trial.id, 1, "abc", 2)) is True
    assert store.add_metrics(reports[:1], MetricBatch(trial.id, 1, "other", 1)) is True
    assert store.add_metrics(reports[:1], MetricBatch(trial.id, 2, "abc", 1)) is True
    assert store.count_metrics(trial.id, "training") == 6


def test_ended_runs_metric_batches_are_forgotten(store: Store) -> None:
    """metric_batches holds only runs still going: ending run 2 drops runs 1 and 2's keys."""
    from trialkit.store import MetricBatch

    trial, other = new_trial(store), new_trial(store, "other")
    report = NewMetric(trial_id=trial.id, group="training", steps_completed=1, values={})
    batches = [MetricBatch(trial.id, run, "abc", seq) for run in (1, 2, 3) for seq in (1, 2)]
    for batch in batches:
        store.add_metrics([report], batch)
    kept = MetricBatch(other.id, 2, "abc", 1)
    store.add_metrics([dataclasses.replace(report, trial_id=other.id)], kept)

    assert store.forget_metric_batches(trial.id, through_run=2) == 4
    assert [store.metric_batch_stored(b) for b in batches] == [False] * 4 + [True] * 2
    assert store.metric_batch_stored(kept)  # another trial's run 2 is untouched
    assert store.count_metrics(trial.id, "training") == 6  # the metrics themselves stay


def test_metric_batch_of_a_missing_trial_is_a_store_error(store: Store) -> None:
    from trialkit.store import MetricBatch

    report = NewMetric(trial_id=999, group="training", steps_completed=1, values={})
    with pytest.raises(StoreError):
        store.add_metrics([report], MetricBatch(999, 1, "abc", 1))
    assert not store.metric_batch_stored(MetricBatch(999, 1, "abc", 1))  # rolled back together
