"""A 0.37 op completion sent again after the master took it (its answer lost to a master killed
before replying, then retried on the next master) is answered as done and changes nothing; it
was a 400 that errored the trial (CI: `test_master_killed_mid_search_continues_the_same_search`,
"expected completion of op length 16 (completed=False) but received length 4")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.inprocess_master import InProcessMaster, inprocess_master

ASHA = {
    "name": "asha",
    "entrypoint": "python3 train.py",
    "hyperparameters": {"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}},
    "searcher": {
        "name": "async_halving",
        "metric": "loss",
        "max_length": {"batches": 16},
        "num_rungs": 2,
        "divisor": 4,
        "max_trials": 4,
        "max_concurrent_trials": 4,
    },
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        yield m


def _complete(api: InProcessMaster, trial_id: int, length: int, metric: float) -> int:
    path = f"/api/v1/trials/{trial_id}/searcher/completed_operation"
    return int(api.call("POST", path, {"length": length, "metric": metric}).status_code)


def test_a_retried_completion_is_answered_as_done_and_changes_nothing(
    api: InProcessMaster,
) -> None:
    exp = api.create(ASHA)
    trials = api.store.list_trials(exp)
    for i, t in enumerate(trials):  # the first has the best loss: promoted once all four report
        assert _complete(api, t.id, 4, float(i)) == 200
    best, closed = trials[0].id, trials[1].id
    before = {t.id: t.searcher for t in api.store.list_trials(exp)}
    assert (before[best].op_length, before[best].op_complete) == (16, False)
    assert (before[closed].op_length, before[closed].op_complete) == (4, True)

    assert _complete(api, best, 4, 0.0) == 200  # its rung-0 op again, now training to 16
    assert _complete(api, closed, 4, 1.0) == 200  # its last op again
    assert {t.id: t.searcher for t in api.store.list_trials(exp)} == before


def test_a_completion_of_an_op_never_given_is_still_refused(api: InProcessMaster) -> None:
    exp = api.create(ASHA)
    trial = api.store.list_trials(exp)[0]
    resp_status = _complete(api, trial.id, 16, 0.5)  # longer than its op of 4
    assert resp_status == 400
    assert api.store.get_trial(trial.id).searcher.op_complete is False
