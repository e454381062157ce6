"""The metric ingest path (issue 21): many trials' batches stored in one transaction, each at
most once and only for the trial's current run (SQLite and PostgreSQL); the master's writer
thread grouping concurrent batches; and the WebSocket stream the Core API sends them over,
served by a real uvicorn on loopback: answers, refusals, a broken stream, a master without one."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from tests.inprocess_master import TOKEN, InProcessMaster, inprocess_master, served
from trialkit.client import MasterClient
from trialkit.core._backend import Outcome
from trialkit.core._http import HttpBackend
from trialkit.core._metrics import MetricsShipper
from trialkit.core._stream import MetricStream, StreamUnsupported
from trialkit.errors import APIError, MasterUnavailable
from trialkit.master.ingest._group_commit import MetricIngest
from trialkit.rest import MetricsStored
from trialkit.store import (
    Delivered,
    MetricBatch,
    MetricDelivery,
    NewMetric,
    Store,
    Trial,
    TrialState,
)


def running_trial(store: Store, run_id: int = 1) -> Trial:
    exp = store.create_experiment(name="e", config={"searcher": {"name": "single"}})
    trial = store.create_trial(experiment_id=exp.id, request_id="r", hparams={}, seed=1)
    return store.update_trial(trial.id, run_id=run_id)


def delivery(trial: Trial, run_id: int, seq: int, *steps: int, sender: str = "s") -> MetricDelivery:
    reports = [
        NewMetric(trial.id, "training", step, {"loss": 1.0 / step}, run_id=run_id) for step in steps
    ]
    batch = MetricBatch(trial.id, run_id, sender, seq)
    return MetricDelivery(reports, batch, trial_id=trial.id, run_id=run_id)


def stored_steps(store: Store, trial: Trial) -> list[int]:
    return [m.steps_completed for m in store.list_metrics(trial.id, "training")]


def test_one_transaction_stores_each_batch_once_and_only_for_the_current_run(
    store: Store,
) -> None:
    a, b, ended = running_trial(store), running_trial(store, run_id=3), running_trial(store)
    store.update_trial(ended.id, state=TrialState.COMPLETED)
    outcomes = store.add_metric_deliveries(
        [
            delivery(a, 1, 1, 1, 2),
            delivery(b, 2, 1, 1),  # an old run of b: refused
            delivery(a, 1, 1, 1, 2),  # the same batch again, in the same transaction
            delivery(b, 3, 1, 5, 6),
            delivery(ended, 1, 1, 9),  # the trial ended: refused
            delivery(a, 1, 2, 3),
        ]
    )
    assert outcomes == [
        Delivered.STORED,
        Delivered.STALE,
        Delivered.DUPLICATE,
        Delivered.STORED,
        Delivered.STALE,
        Delivered.STORED,
    ]
    assert stored_steps(store, a) == [1, 2, 3]
    assert stored_steps(store, b) == [5, 6]
    assert stored_steps(store, ended) == []
    # A later transaction knows the batch too (a resend after a lost reply).
    assert store.add_metric_deliveries([delivery(a, 1, 2, 3)]) == [Delivered.DUPLICATE]
    assert stored_steps(store, a) == [1, 2, 3]


def record_statements(store: Store) -> list[str]:
    """The SQL the store's connections send from now on (SQLite's trace callback; on
    PostgreSQL a psycopg cursor that notes each ``execute`` and ``copy``)."""
    statements: list[str] = []
    if store._engine.dialect.name == "sqlite":

        def trace(dbapi_connection: Any, *_: Any) -> None:
            dbapi_connection.set_trace_callback(statements.append)

    else:
        import psycopg

        class Recording(psycopg.Cursor):  # type: ignore[type-arg]
            def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
                statements.append(str(query))
                return super().execute(query, *args, **kwargs)

            def copy(self, statement: Any, *args: Any, **kwargs: Any) -> Any:
                statements.append(str(statement))
                return super().copy(statement, *args, **kwargs)

        def trace(dbapi_connection: Any, *_: Any) -> None:
            dbapi_connection.cursor_factory = Recording

    event.listen(store._engine, "checkout", trace)
    return statements


def test_a_large_group_is_written_in_a_few_statements_not_one_per_row(store: Store) -> None:
    # sqlite3's executemany released the GIL around every row; taking it back from the busy
    # event loop cost a switch interval (5 ms) each: 2,000 rows took 4.5 s beside a busy thread.
    # psycopg parses a long multi-row VALUES in Python on every call (~30 ms per 1,000 rows):
    # on PostgreSQL every statement must have the same text whatever the group's size.
    trial = running_trial(store)
    statements = record_statements(store)
    assert store.add_metric_deliveries([delivery(trial, 1, 1, 1)]) == [Delivered.STORED]
    small, statements[:] = list(statements), []
    group = [delivery(trial, 1, seq, 2 * seq - 2, 2 * seq - 1) for seq in range(2, 1252)]
    assert store.add_metric_deliveries(group) == [Delivered.STORED] * 1250
    large = list(statements)
    assert stored_steps(store, trial) == list(range(1, 2502))
    assert [m.values for m in store.list_metrics(trial.id, "training")][-1] == {"loss": 1 / 2501}
    inserts = [s for s in large if s.startswith(("INSERT INTO metrics", "COPY metrics"))]
    claims = [s for s in large if s.startswith("INSERT INTO metric_batches")]
    if store._engine.dialect.name == "sqlite":
        assert (len(inserts), len(claims)) == (3, 2)  # 2,500 rows and 1,250 keys, 1,000 a go
    else:
        assert (len(inserts), len(claims)) == (1, 1)
        assert inserts[0].startswith("COPY metrics")
        assert large == small


def test_on_sqlite_a_group_is_read_in_one_row_per_statement(tmp_path: Path) -> None:
    # sqlite3 releases the GIL for each row it steps to: the group's trials and its batches'
    # keys fetched a row each (SELECT ... IN, INSERT ... RETURNING) made a group of 200 batches
    # take 71 ms beside a busy thread instead of 6.7 ms.
    store = Store.at(tmp_path / "home")
    trials = [running_trial(store) for _ in range(30)]
    store.add_metric_deliveries([delivery(trials[0], 1, 1, 1)])  # one key stored before
    statements = record_statements(store)
    group = [delivery(t, 1, seq, seq) for t in trials for seq in (1, 2)]
    outcomes = store.add_metric_deliveries(group)
    assert outcomes.count(Delivered.DUPLICATE) == 1 and outcomes.count(Delivered.STORED) == 59
    assert not [s for s in statements if "RETURNING" in s]
    reads = [s for s in statements if s.startswith(("SELECT", "WITH"))]
    assert reads
    db = sqlite3.connect(tmp_path / "home" / "trialkit.db")
    try:
        assert [len(db.execute(s).fetchall()) for s in reads] == [1] * len(reads), reads
    finally:
        db.close()


def test_a_delivery_without_a_run_is_stored_for_any_trial_state(store: Store) -> None:
    trial = running_trial(store)
    store.update_trial(trial.id, state=TrialState.COMPLETED)
    report = NewMetric(trial.id, "training", 4, {"loss": 0.5})
    assert store.add_metric_deliveries([MetricDelivery([report])]) == [Delivered.STORED]
    assert stored_steps(store, trial) == [4]


class CountingStore:
    """A real store that counts the transactions the writer asks of it."""

    def __init__(self, store: Store, fail_seq: int | None = None) -> None:
        self.store = store
        self.calls: list[int] = []
        self.fail_seq = fail_seq

    def add_metric_deliveries(self, deliveries: list[MetricDelivery]) -> list[Delivered]:
        self.calls.append(len(deliveries))
        if any(d.batch is not None and d.batch.seq == self.fail_seq for d in deliveries):
            raise RuntimeError("this batch breaks the transaction")
        return self.store.add_metric_deliveries(deliveries)


def test_the_writer_groups_concurrent_batches_and_isolates_a_failing_one(tmp_path: Path) -> None:
    store = Store.at(tmp_path / "home")
    try:
        trial = running_trial(store)
        counting = CountingStore(store, fail_seq=7)
        ingest = MetricIngest(counting, idle_exit=0.05)  # type: ignore[arg-type]

        async def deliver_eight() -> list[Delivered | BaseException]:
            batches = [ingest.deliver(delivery(trial, 1, seq, seq)) for seq in range(1, 9)]
            return await asyncio.gather(*batches, return_exceptions=True)

        results = asyncio.run(deliver_eight())
        assert isinstance(results.pop(6), RuntimeError)  # seq 7's
        assert set(results) == {Delivered.STORED}
        assert sorted(stored_steps(store, trial)) == [1, 2, 3, 4, 5, 6, 8]
        # 8 batches came at once: fewer transactions than batches (plus the failing group's
        # batches retried one by one).
        assert counting.calls[0] > 1, counting.calls
    finally:
        store.close()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        m.create()  # experiment 1 with trial 1 (run 0: never launched here)
        yield m


def body(seq: int, *steps: int, run_id: int = 0) -> dict[str, Any]:
    reports = [
        {"group": "training", "steps_completed": s, "metrics": {"loss": 1.0 / s}} for s in steps
    ]
    return {"run_id": run_id, "sender": "s1", "seq": seq, "reports": reports}


def test_the_stream_answers_each_batch_and_stores_a_resend_once(api: InProcessMaster) -> None:
    with served(api.app) as url:
        stream = MetricStream(MasterClient(url, TOKEN), 1)
        try:
            first = stream.send(body(1, 1, 2))
            again = stream.send(body(1, 1, 2))
            second = stream.send(body(2, 3))
        finally:
            stream.close()
    assert (first.stored, first.duplicate) == (2, False)
    assert (again.stored, again.duplicate) == (0, True)
    assert (second.stored, second.duplicate) == (1, False)
    assert [m.steps_completed for m in api.store.list_metrics(1, "training")] == [1, 2, 3]


def test_the_stream_refuses_like_the_post(api: InProcessMaster) -> None:
    with served(api.app) as url:
        stream = MetricStream(MasterClient(url, TOKEN), 1)
        try:
            with pytest.raises(APIError) as stale:
                stream.send(body(1, 1, run_id=5))  # not the trial's run
            with pytest.raises(APIError) as bad:
                stream.send({**body(2, 1), "reports": [{"group": "a.b", "steps_completed": 1}]})
            assert stream.send(body(3, 7)).stored == 1  # the stream still works after both
        finally:
            stream.close()
        # A refused handshake sends the trial to the POST, which says precisely what is wrong.
        with pytest.raises(StreamUnsupported):
            MetricStream(MasterClient(url, "not-the-token"), 1).send(body(1, 1))
        wrong = HttpBackend(MasterClient(url, "not-the-token"), 1, 1, 0)
        with pytest.raises(APIError) as unauthorized:  # the stream is refused: the POST says why
            wrong.send_metric_batch(body(1, 1)["reports"], "s1", 1)
        wrong.close()
    assert stale.value.status == 409 and "not its current run" in str(stale.value)
    assert bad.value.status == 422
    assert any(e.startswith("body.reports.0.group") for e in bad.value.errors), bad.value.errors
    assert unauthorized.value.status == 401


def test_a_broken_stream_is_reopened_and_the_resend_stored_once(
    api: InProcessMaster, tmp_path: Path
) -> None:
    with served(api.app) as url:
        stream = MetricStream(MasterClient(url, TOKEN), 1)
        assert stream.send(body(1, 1)).stored == 1
        sock, _ = stream._conn  # type: ignore[misc]
        sock.close()  # the connection breaks under the shipper (as when the master restarts)
        with pytest.raises(MasterUnavailable):
            stream.send(body(2, 2))
        resent = stream.send(body(2, 2))  # the shipper resends the same seq: a new stream
        assert resent.stored == 1
        stream.close()
    assert [m.steps_completed for m in api.store.list_metrics(1, "training")] == [1, 2]


def test_batches_go_without_waiting_and_answers_come_in_order(api: InProcessMaster) -> None:
    with served(api.app) as url:
        stream = MetricStream(MasterClient(url, TOKEN), 1)
        try:
            stream.send_nowait(body(1, 1))
            stream.send_nowait(body(2, 2, run_id=5))  # not the trial's run: refused
            stream.send_nowait(body(3, 3))
            stream.send_nowait(body(1, 1))  # a resend of batch 1
            outcomes: list[tuple[int, Outcome]] = []
            while len(outcomes) < 4:
                outcomes += stream.outcomes(wait=True)
            assert stream.outcomes(wait=False) == []  # nothing left in flight
        finally:
            stream.close()
    assert [seq for seq, _ in outcomes] == [1, 2, 3, 1]
    refused = outcomes[1][1]
    assert isinstance(refused, APIError) and refused.status == 409
    assert [e for _, e in outcomes if e is not refused] == [
        MetricsStored(stored=1),
        MetricsStored(stored=1),
        MetricsStored(stored=0, duplicate=True),
    ]
    assert [m.steps_completed for m in api.store.list_metrics(1, "training")] == [1, 3]


class LosesAnswers(HttpBackend):
    """The stream breaks after the master stored several batches, before their answers are read
    (as when the master restarts right after a commit)."""

    broken = 0

    def metric_outcomes(self, wait: bool) -> list[tuple[int, Outcome]]:
        assert self._stream is not None
        if self.broken == 0:
            if len(self._stream._unanswered) < 3 and not wait:
                return []  # answers not read yet: more batches go meanwhile
            time.sleep(0.2)  # let the master store them
            self.broken += 1
            self._stream._break(ConnectionResetError("reset"))
        return super().metric_outcomes(wait)


def test_a_shipper_resends_every_batch_in_flight_when_the_stream_breaks(
    api: InProcessMaster,
) -> None:
    with served(api.app) as url:
        backend = LosesAnswers(MasterClient(url, TOKEN), 1, 1, 0)
        shipper = MetricsShipper(backend, interval=0.01)
        shipper.WINDOW = 4
        try:
            for step in range(1, 201):
                shipper.put({"group": "training", "steps_completed": step, "metrics": {"x": 1}})
                time.sleep(0.001)
            shipper.close()
        finally:
            backend.close()
    assert backend.broken == 1 and shipper.shipped == 200
    assert [m.steps_completed for m in api.store.list_metrics(1, "training")] == list(range(1, 201))


def test_a_refusal_in_an_answer_fails_the_shipper(api: InProcessMaster) -> None:
    api.store.update_trial(1, run_id=2)  # the shipper's run (0) was replaced
    with served(api.app) as url:
        backend = HttpBackend(MasterClient(url, TOKEN), 1, 1, 0)
        shipper = MetricsShipper(backend)
        try:
            shipper.put({"group": "training", "steps_completed": 1, "metrics": {"x": 1}})
            with pytest.raises(RuntimeError, match="not its current run"):
                shipper.flush()
            shipper.close()
        finally:
            backend.close()
    assert api.store.count_metrics(1, "training") == 0


def wait_for(predicate: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_the_stream_opens_before_the_first_report(api: InProcessMaster) -> None:
    """The shipping thread connects as it starts: the first batch does not wait for the
    handshake, and the master does not see every handshake at the first report."""
    with served(api.app) as url:
        backend = HttpBackend(MasterClient(url, TOKEN), 1, 1, 0)
        shipper = MetricsShipper(backend)
        try:
            assert backend._stream is not None
            stream = backend._stream
            wait_for(lambda: stream._conn is not None, "the stream to open with nothing sent")
            shipper.put({"group": "training", "steps_completed": 1, "metrics": {"x": 1}})
            shipper.close()
        finally:
            backend.close()
    assert api.store.count_metrics(1, "training") == 1


def test_without_a_stream_the_backend_posts(api: InProcessMaster) -> None:
    # A master without the stream route (an older one) refuses the handshake: the trial POSTs.
    from starlette.routing import WebSocketRoute

    api.app.router.routes[:] = [
        r for r in api.app.router.routes if not isinstance(r, WebSocketRoute)
    ]
    with served(api.app) as url:
        stream = MetricStream(MasterClient(url, TOKEN), 1)
        with pytest.raises(StreamUnsupported):
            stream.send(body(1, 1))
        backend = HttpBackend(MasterClient(url, TOKEN), 1, 1, 0)
        shipper = MetricsShipper(backend)
        try:
            # Found out as the shipping thread starts, before any report.
            wait_for(lambda: backend._stream is None, "the backend to turn to the POST")
            for step in range(1, 21):
                shipper.put({"group": "training", "steps_completed": step, "metrics": {"x": 1}})
            shipper.close()
        finally:
            backend.close()
        assert backend.metrics_interval == 0.25  # the POST's pace, not the stream's
    assert api.store.count_metrics(1, "training") == 20


class FastBackend(HttpBackend):
    """A backend with no master behind it, whose shipper sends every 5 ms; tests override
    what a send does."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    @property
    def metrics_interval(self) -> float:
        return 0.005


def test_the_tensorboard_sink_gets_a_second_of_reports_at_a_time() -> None:
    class Quick(FastBackend):
        def send_metric_batch(
            self, reports: list[dict[str, Any]], sender: str, seq: int
        ) -> MetricsStored | None:
            self.sent.append(seq)
            return MetricsStored(stored=len(reports))

    backend = Quick()
    shipper = MetricsShipper(backend)
    handed: list[int] = []
    shipper.add_sink(lambda reports: handed.append(len(reports)))
    shipper.SINK_INTERVAL = 0.2
    for step in range(1, 301):  # ~0.6 s of reports, one every 2 ms
        shipper.put({"group": "training", "steps_completed": step, "metrics": {"x": 1}})
        time.sleep(0.002)
    shipper.close()
    assert sum(handed) == 300  # every report reached the sink, the last ones at close
    # ~0.6 s at SINK_INTERVAL 0.2: a few calls (the last at close), each of many batches.
    assert 2 <= len(handed) <= 6 and len(backend.sent) > 5 * len(handed), (backend.sent, handed)


def test_batches_a_backend_lost_track_of_go_again() -> None:
    # A backend that says a batch is in flight and then knows nothing of it (its connection
    # was replaced under it): the shipper must not wait for those answers forever.
    class Forgetful(FastBackend):
        def send_metric_batch(
            self, reports: list[dict[str, Any]], sender: str, seq: int
        ) -> MetricsStored | None:
            self.sent.append(seq)
            if self.sent.count(seq) == 1:
                return None  # the first time "in flight", then stored
            return MetricsStored(stored=len(reports))

        def metric_outcomes(self, wait: bool) -> list[tuple[int, Outcome]]:
            return []

    backend = Forgetful()
    shipper = MetricsShipper(backend)
    for step in range(1, 4):
        shipper.put({"group": "training", "steps_completed": step, "metrics": {"x": 1}})
    shipper.close()
    assert shipper.shipped == 3 and len(set(backend.sent)) < len(backend.sent)


def voluntary_switches() -> int:
    """How many times the calling thread has gone to sleep (Linux's count for the thread)."""
    status = Path(f"/proc/self/task/{threading.get_native_id()}/status").read_text()
    return int(status.split("voluntary_ctxt_switches:")[1].split()[0])


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_flush_sleeps_until_the_answer_instead_of_polling() -> None:
    # flush() polled every 5 ms: 200 trials flushing while the master caught up woke 40,000
    # times a second and took the CPU the master needed.
    class SlowAnswer(FastBackend):
        def send_metric_batch(
            self, reports: list[dict[str, Any]], sender: str, seq: int
        ) -> MetricsStored | None:
            self.sent.append(seq)
            return None  # in flight

        def metric_outcomes(self, wait: bool) -> list[tuple[int, Outcome]]:
            if not wait:
                return []
            time.sleep(0.5)  # the master is behind
            answered, self.sent = self.sent, []
            return [(seq, MetricsStored(stored=1)) for seq in answered]

    shipper = MetricsShipper(SlowAnswer())
    shipper.put({"group": "training", "steps_completed": 1, "metrics": {"x": 1}})
    before = voluntary_switches()
    shipper.flush()
    slept = voluntary_switches() - before
    assert shipper.shipped == 1
    assert slept <= 10, f"flush() woke {slept} times while one answer took 0.5 s"
    shipper.close()
