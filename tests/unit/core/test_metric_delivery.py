"""Metric batches are delivered at most once and only for the trial's current run (issue 12
item 5): a resend after a lost reply stores nothing new; a replaced run or an ended trial is
refused with 409, and the trial's shipper stops on that answer instead of retrying forever.
The master's app is served on loopback and reached through the trial's real HTTP backend."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.inprocess_master import TOKEN, InProcessMaster, inprocess_master, served
from trialkit.client import MasterClient
from trialkit.core._backend import Outcome
from trialkit.core._http import HttpBackend
from trialkit.core._metrics import MetricsShipper
from trialkit.store import TrialState


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        m.create()  # experiment 1 with trial 1 (run 0: never launched here)
        yield m


def report(step: int) -> dict[str, Any]:
    return {"group": "training", "steps_completed": step, "metrics": {"loss": 1.0 / step}}


def test_same_batch_posted_twice_is_stored_once(api: InProcessMaster) -> None:
    body = {"run_id": 0, "sender": "s1", "seq": 1, "reports": [report(1), report(2)]}
    first = api.call("POST", "/api/v1/trials/1/metrics", body)
    again = api.call("POST", "/api/v1/trials/1/metrics", body)
    assert first.json() == {"stored": 2, "duplicate": False}
    assert again.status_code == 200 and again.json() == {"stored": 0, "duplicate": True}
    assert api.store.count_metrics(1, "training") == 2


def test_batch_without_sender_and_seq_sent_again_is_stored_once(api: InProcessMaster) -> None:
    """Issue 31 item 7: a POST without a batch key is keyed by its content, so a client that
    sends it again after a lost reply does not store it twice; other content is stored."""
    body = {"run_id": 0, "reports": [report(1), report(2)]}
    first = api.call("POST", "/api/v1/trials/1/metrics", body)
    again = api.call("POST", "/api/v1/trials/1/metrics", body)
    assert first.json() == {"stored": 2, "duplicate": False}
    assert again.status_code == 200 and again.json() == {"stored": 0, "duplicate": True}
    other = api.call("POST", "/api/v1/trials/1/metrics", {"run_id": 0, "reports": [report(3)]})
    assert other.json() == {"stored": 1, "duplicate": False}
    assert api.store.count_metrics(1, "training") == 3


class LostReplyBackend(HttpBackend):
    """The master stores the batch, then the reply is lost (as when it dies right after commit)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.lost = 0

    def metric_outcomes(self, wait: bool) -> list[tuple[int, Outcome]]:
        outcomes = super().metric_outcomes(wait)
        if outcomes and self.lost == 0:  # answers came for stored batches: lose them
            self.lost += 1
            assert self._stream is not None
            self._stream.close()
            raise ConnectionError("connection reset before the reply")
        return outcomes


def test_shipper_resend_after_lost_reply_is_stored_once(api: InProcessMaster) -> None:
    with served(api.app) as url:
        backend = LostReplyBackend(MasterClient(url, TOKEN), 1, 1, 0)
        shipper = MetricsShipper(backend, interval=0.01)
        for step in range(1, 51):
            shipper.put(report(step))
        shipper.close()
        backend.close()
    assert backend.lost == 1
    steps = [m.steps_completed for m in api.store.list_metrics(1, "training")]
    assert sorted(steps) == list(range(1, 51))


@pytest.mark.parametrize("why", ["replaced run", "ended trial"])
def test_reports_of_a_replaced_run_or_ended_trial_get_409(api: InProcessMaster, why: str) -> None:
    if why == "replaced run":
        api.store.update_trial(1, run_id=2)
        expected = "run 1 of trial 1 is not its current run (2)"
    else:
        api.store.update_trial(1, run_id=1, state=TrialState.COMPLETED)
        expected = "trial 1 is COMPLETED; it takes no more reports"
    resp = api.call("POST", "/api/v1/trials/1/metrics", {"run_id": 1, "reports": [report(1)]})
    assert resp.status_code == 409 and expected in resp.json()["detail"]
    assert api.store.count_metrics(1) == 0


def test_trial_shipper_stops_on_409_instead_of_retrying(api: InProcessMaster) -> None:
    api.store.update_trial(1, run_id=3)  # this process is run 2: a replaced run
    with served(api.app) as url:
        backend = HttpBackend(MasterClient(url, TOKEN), 1, 1, 2)
        shipper = MetricsShipper(backend, interval=0.01, drain_timeout=60)
        shipper.put(report(1))
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="not its current run"):
            shipper.flush()
        assert time.monotonic() - start < 10  # refused once, not retried until the timeout
        shipper.close()
        backend.close()
    assert api.store.count_metrics(1) == 0


class CountsRequests:
    """The master's app, counting what reaches it: each HTTP request, and each stream message."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen.append(f"{scope['method']} {scope['path']}")
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)

        async def counted() -> Any:
            message = await receive()
            if message["type"] == "websocket.receive":
                self.seen.append("stream message")
            return message

        return await self.app(scope, counted, send)


def validation(step: int, loss: Any) -> dict[str, Any]:
    return {"group": "validation", "steps_completed": step, "metrics": {"loss": loss}}


def test_is_this_the_best_validation_costs_no_request_of_its_own(api: InProcessMaster) -> None:
    """Issue 34 item 3: the master answers in the reply to the batch that carried the
    validation (searcher metric ``loss``, smaller is better; strictly better than every
    validation before it). It cost a flush and a GET of the experiment's best per validation."""
    counting = CountsRequests(api.app)
    with served(counting) as url:
        backend = HttpBackend(MasterClient(url, TOKEN), 1, 1, 0)
        shipper = MetricsShipper(backend)
        answers = []
        try:
            shipper.flush()  # the stream is open: what follows is the validations' cost alone
            counting.seen.clear()
            for step, loss in [(1, 0.5), (2, 0.7), (3, 0.5), (4, 0.25), (5, "NaN")]:
                shipper.put(validation(step, loss))
                shipper.flush()
                answers.append(shipper.is_best_validation(step))
            shipper.close()
        finally:
            backend.close()
    assert answers == [True, False, False, True, False]  # a tie is not better; NaN never is
    assert counting.seen == ["stream message"] * 5


def test_validations_in_one_batch_are_judged_in_order(api: InProcessMaster) -> None:
    """Each validation of a batch raises the bar for those after it; the POST answers alike."""
    reports = [validation(1, 0.5), report(2), validation(3, 0.4), validation(4, 0.45)]
    resp = api.call("POST", "/api/v1/trials/1/metrics", {"run_id": 0, "reports": reports})
    assert resp.json() == {
        "stored": 4,
        "duplicate": False,
        "is_best_validation": [True, True, False],
    }
    worse = api.call("POST", "/api/v1/trials/1/metrics", {"reports": [validation(5, 0.41)]})
    assert worse.json()["is_best_validation"] == [False]
