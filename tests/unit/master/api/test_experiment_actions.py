"""Pause, activate and kill on an experiment that has ended are refused with 409 naming its
state (issue 31 item 5): a 200 that changed nothing read as success to the REST client and
the web UI, while the CLI called the same an error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.inprocess_master import InProcessMaster, inprocess_master
from trialkit.store import ExperimentState


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        yield m


@pytest.mark.parametrize(
    ("state", "action"),
    [
        (ExperimentState.CANCELED, "activate"),
        (ExperimentState.COMPLETED, "kill"),
        (ExperimentState.ERROR, "pause"),
    ],
)
def test_actions_on_a_finished_experiment_answer_409_with_its_state(
    api: InProcessMaster, state: ExperimentState, action: str
) -> None:
    exp = api.create()
    api.store.update_experiment(exp, state=state)
    resp = api.call("POST", f"/api/v1/experiments/{exp}/{action}")
    assert resp.status_code == 409, resp.text
    assert resp.json() == {
        "detail": f"experiment {exp} is already {state.value}; nothing to {action}"
    }
    assert api.store.get_experiment(exp).state == state


def test_a_finished_experiment_can_still_be_archived(api: InProcessMaster) -> None:
    exp = api.create()
    api.store.update_experiment(exp, state=ExperimentState.CANCELED)
    resp = api.call("POST", f"/api/v1/experiments/{exp}/archive")
    assert resp.status_code == 200, resp.text
    assert resp.json()["experiment"]["archived"] is True


def test_actions_on_a_running_experiment_still_apply(api: InProcessMaster) -> None:
    exp = api.create()
    resp = api.call("POST", f"/api/v1/experiments/{exp}/pause")
    assert resp.status_code == 200 and resp.json()["experiment"]["state"] == "PAUSED"
