"""The store on a PostgreSQL server that is killed with SIGKILL and restarted (issue 31, item 9):
operations wait for the server instead of failing, connections the pool held from before the
restart are replaced, a metric batch is stored once across it, an update whose commit got no
answer is run again but an insert is not (nor a metric group holding a report without a batch
key; a keyed group is, and stored once), and a server that stays down is one clear
StoreUnavailable once the reconnect window is over. The fault suite
(tests/faults/test_postgres_kill.py) does this under a running search."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from tests.inprocess_master import SINGLE, TOKEN, inprocess_master, served
from tests.postgres_server import PostgresServer
from trialkit.client import MasterClient
from trialkit.store import (
    Delivered,
    MetricBatch,
    MetricDelivery,
    NewMetric,
    Store,
    StoreUnavailable,
    _retry,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def store(postgres: PostgresServer) -> Iterator[Store]:
    store = Store(postgres.new_database())
    try:
        yield store
    finally:
        store.close()


def _restart_later(postgres: PostgresServer, delay: float) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(delay), postgres.start()))
    thread.start()
    return thread


def _trial(store: Store) -> int:
    exp = store.create_experiment(name="e", config={})
    trial = store.create_trial(experiment_id=exp.id, request_id="r", hparams={}, seed=0)
    store.update_trial(trial.id, run_id=1)
    return trial.id


def _delivery(trial_id: int, seq: int) -> MetricDelivery:
    report = NewMetric(
        trial_id=trial_id, group="training", steps_completed=seq, values={}, run_id=1
    )
    return MetricDelivery([report], MetricBatch(trial_id, 1, "s", seq))


def test_operations_wait_for_a_restarting_server(store: Store, postgres: PostgresServer) -> None:
    trial_id = _trial(store)
    postgres.kill()
    restart = _restart_later(postgres, 1.0)
    try:
        store.update_trial(trial_id, progress=0.5)  # a write while the server is down
        assert store.add_metric_deliveries([_delivery(trial_id, 1)]) == [Delivered.STORED]
    finally:
        restart.join()
    assert store.get_trial(trial_id).progress == 0.5
    assert store.count_metrics(trial_id) == 1


def test_connections_from_before_a_restart_are_replaced(
    store: Store, postgres: PostgresServer
) -> None:
    trial_id = _trial(store)
    assert store.add_metric_deliveries([_delivery(trial_id, 1)]) == [Delivered.STORED]
    postgres.kill()
    postgres.start()  # the pool still holds the connections the kill broke
    assert store.add_metric_deliveries([_delivery(trial_id, 2)]) == [Delivered.STORED]
    assert store.add_metric_deliveries([_delivery(trial_id, 2)]) == [Delivered.DUPLICATE]
    assert store.get_trial(trial_id).run_id == 1
    assert store.count_metrics(trial_id) == 2


def test_a_server_that_stays_down_is_one_store_unavailable(
    store: Store, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    trial_id = _trial(store)
    monkeypatch.setattr(_retry, "RECONNECT_WINDOW", 0.5)
    postgres.kill()
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match=r"still unreachable after 0\.5 s") as err:
            store.get_trial(trial_id)
        assert time.monotonic() - started < 5
        assert "\n" not in str(err.value).strip().splitlines()[0]
    finally:
        postgres.start()
    assert store.get_trial(trial_id).id == trial_id


def _kill_before_the_next_commit(
    store: Store, postgres: PostgresServer, restart_after: float | None
) -> list[threading.Thread]:
    """Kill the server when the next transaction is about to send its COMMIT (which then gets
    no answer: its outcome is in doubt to the store); restart it later."""
    restarts: list[threading.Thread] = []
    killed: list[bool] = []

    def kill(_connection: Any) -> None:
        if killed:
            return
        killed.append(True)
        postgres.kill()
        if restart_after is not None:
            restarts.append(_restart_later(postgres, restart_after))

    event.listen(store._engine, "commit", kill)
    return restarts


def test_an_update_whose_commit_got_no_answer_is_run_again(
    store: Store, postgres: PostgresServer
) -> None:
    trial_id = _trial(store)
    restarts = _kill_before_the_next_commit(store, postgres, restart_after=1.0)
    try:
        store.update_trial(trial_id, progress=0.25)
    finally:
        [t.join() for t in restarts]
    assert restarts, "the server was not killed"
    assert store.get_trial(trial_id).progress == 0.25


def test_an_insert_whose_commit_got_no_answer_is_not_run_again(
    store: Store, postgres: PostgresServer
) -> None:
    exp = store.create_experiment(name="e", config={})
    _kill_before_the_next_commit(store, postgres, restart_after=None)
    try:
        with pytest.raises(StoreUnavailable) as err:
            store.create_trial(experiment_id=exp.id, request_id="r", hparams={}, seed=0)
        assert err.value.in_doubt
    finally:
        postgres.start()
    assert store.list_trials(exp.id) == []  # not stored twice, nor (as it was killed) once


def _unkeyed(trial_id: int, step: int) -> MetricDelivery:
    """A report sent without a batch key (no sender/seq): a resend would be stored again."""
    report = NewMetric(
        trial_id=trial_id, group="training", steps_completed=step, values={}, run_id=1
    )
    return MetricDelivery([report], None, trial_id, 1)


def test_a_metric_group_whose_commit_got_no_answer_is_in_doubt_with_an_unkeyed_report(
    store: Store, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group holding a report without a batch key is not sent again after its commit got no
    answer (it could be stored twice): StoreUnavailable in doubt, at once."""
    trial_id = _trial(store)
    monkeypatch.setattr(_retry, "RECONNECT_WINDOW", 0.3)  # a retry (wrong here) ends soon
    _kill_before_the_next_commit(store, postgres, restart_after=None)
    try:
        with pytest.raises(StoreUnavailable) as err:
            store.add_metric_deliveries([_delivery(trial_id, 1), _unkeyed(trial_id, 2)])
        assert err.value.in_doubt is True
        assert "still unreachable" not in str(err.value)  # not retried first
    finally:
        postgres.start()
    # Killed before its COMMIT reached the server: nothing of the group was stored.
    assert store.count_metrics(trial_id) == 0


def test_a_keyed_metric_group_whose_commit_got_no_answer_is_sent_again_and_stored_once(
    store: Store, postgres: PostgresServer
) -> None:
    """A group whose reports all carry batch keys is not in doubt: the store sends it again
    once the server is back, and a later resend of it is a duplicate, not stored twice."""
    trial_id = _trial(store)
    group = [_delivery(trial_id, 1), _delivery(trial_id, 2)]
    restarts = _kill_before_the_next_commit(store, postgres, restart_after=0.3)
    try:
        assert store.add_metric_deliveries(group) == [Delivered.STORED, Delivered.STORED]
    finally:
        [t.join() for t in restarts]
    assert restarts, "the server was not killed"
    assert store.add_metric_deliveries(group) == [Delivered.DUPLICATE, Delivered.DUPLICATE]
    assert store.count_metrics(trial_id) == 2


def _fails_not_in_doubt(store: Store, postgres: PostgresServer, delivery: MetricDelivery) -> None:
    """``delivery`` (the server down, or to die at its commit) fails once the reconnect window is
    over, not in doubt; then the server is started again."""
    try:
        with pytest.raises(StoreUnavailable, match="still unreachable") as err:
            store.add_metric_deliveries([delivery])
        assert err.value.in_doubt is False
    finally:
        postgres.start()


def test_a_keyed_metric_group_whose_commit_got_no_answer_is_not_in_doubt(
    store: Store, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the server down for good, a keyed group's failed commit ends as a StoreUnavailable
    that is not in doubt (the caller may resend it: stored once)."""
    trial_id = _trial(store)
    monkeypatch.setattr(_retry, "RECONNECT_WINDOW", 0.3)
    _kill_before_the_next_commit(store, postgres, restart_after=None)
    _fails_not_in_doubt(store, postgres, _delivery(trial_id, 1))
    assert store.add_metric_deliveries([_delivery(trial_id, 1)]) == [Delivered.STORED]
    assert store.count_metrics(trial_id) == 1


def test_an_unkeyed_metric_group_that_failed_before_its_commit_is_not_in_doubt(
    store: Store, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group that failed before it could commit wrote nothing, keyed or not: not in doubt,
    so it is retried (and stored once) when the server comes back within the window..."""
    trial_id = _trial(store)
    postgres.kill()
    restart = _restart_later(postgres, 0.3)
    try:
        assert store.add_metric_deliveries([_unkeyed(trial_id, 1)]) == [Delivered.STORED]
    finally:
        restart.join()
    assert store.count_metrics(trial_id) == 1
    # ... and ends as a StoreUnavailable not in doubt when it does not.
    monkeypatch.setattr(_retry, "RECONNECT_WINDOW", 0.3)
    postgres.kill()
    _fails_not_in_doubt(store, postgres, _unkeyed(trial_id, 2))
    assert store.count_metrics(trial_id) == 1


def test_a_run_ending_while_the_server_stays_down_is_still_handled(
    postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine reaps a run that exited while the store fails for longer than the reconnect
    window: its exit is handled once the server is back. (It was dropped: the trial, taken to
    have no run, was given a second one, not counted as a restart.)"""
    monkeypatch.setattr(_retry, "RECONNECT_WINDOW", 0.2)
    with inprocess_master(tmp_path / "home", postgres.new_database()) as master:
        exp = master.create({**SINGLE, "entrypoint": "sleep 1", "max_restarts": 0})
        master.engine.start()
        try:
            [trial] = master.store.list_trials(exp)
            # Its one log line (the launch) stored: the exit then needs no log write to be reaped.
            _wait(lambda: master.store.get_trial(trial.id).log_offset > 0, "the run to start")
            postgres.kill()
            _wait(lambda: not master.engine.has_process(trial.id), "the run to be reaped")
            time.sleep(0.5)  # ticks fail meanwhile
            postgres.start()
            _wait(lambda: master.store.get_trial(trial.id).state.ended, "the exit handled")
            # Run 1's exit ended the trial: no second run was started for a trial taken to
            # have none.
            launches = [ln.line for ln in master.store.list_logs(trial.id) if " run " in ln.line]
            assert launches == ["[trialkit] run 1: sh -c 'sleep 1'"]
        finally:
            master.engine.stop()


def _wait(predicate: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.05)


def test_a_request_while_the_server_stays_down_is_a_503_the_client_retries(
    postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the reconnect window a request is answered 503 with one line (it was a 500,
    "internal error", and a traceback), and a client with a retry window sends it again
    (a trial's checkpoint report died on it)."""
    monkeypatch.setattr(_retry, "RECONNECT_WINDOW", 0.2)
    with inprocess_master(tmp_path / "home", postgres.new_database()) as master:
        exp = master.create()
        postgres.kill()
        restart = None
        try:
            resp = master.call("GET", f"/api/v1/experiments/{exp}")
            assert resp.status_code == 503, resp.text
            detail = resp.json()["detail"]
            assert detail.startswith("the master's database is unreachable; try again: ")
            assert "\n" not in detail
            with served(master.app) as url:
                client = MasterClient(url, TOKEN)
                restart = _restart_later(postgres, 1.0)
                try:
                    found = client.describe_experiment(exp, retry_for=30)
                finally:
                    client.close()
            assert found.experiment.id == exp
        finally:
            if restart is None:
                postgres.start()
            else:
                restart.join()
