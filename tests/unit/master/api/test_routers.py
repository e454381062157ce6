"""The app assembled from one router per resource: its routes stay a flat list that
``TokenAuth`` reads to find a request's route template, so a trial token reaches its own
trial's routes (of every router) and no other trial's."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.routing import BaseRoute

from trialkit.master.api._app import create_app
from trialkit.master.api._auth import trial_token
from trialkit.master.engine._engine import Engine, EngineSettings
from trialkit.store import ExperimentState, Store

with warnings.catch_warnings():  # starlette's note on its httpx client, as in inprocess_master
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

KEY = "trial-key-of-the-test-master"


@pytest.fixture
def app_and_trials(tmp_path: Path) -> Iterator[tuple[TestClient, list[int]]]:
    store = Store.at(tmp_path / "home")
    engine = Engine(store, EngineSettings(home=tmp_path, slots=1), "http://x", KEY, tmp_path / "m")
    exp = store.create_experiment(name="e", config={}, state=ExperimentState.PAUSED)
    trials = [
        store.create_trial(experiment_id=exp.id, request_id=f"r{i}", hparams={}, seed=i).id
        for i in range(2)
    ]
    client = TestClient(create_app(store, engine, "admin", trial_key=KEY))
    try:
        yield client, trials
    finally:
        client.close()
        store.close()


def _template(route: BaseRoute) -> str:
    return str(getattr(route, "path", ""))


def test_every_route_of_the_app_has_its_own_template(
    app_and_trials: tuple[TestClient, list[int]],
) -> None:
    client, _ = app_and_trials
    templates = [_template(r) for r in client.app.routes]  # type: ignore[attr-defined]
    assert templates and all(t.startswith("/") for t in templates), templates
    assert "/api/v1/trials/{trial_id}/last_validation" in templates


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/trials/{trial_id}/last_validation",  # _trials
        "/api/v1/trials/{trial_id}/logs",  # _logs
    ],
)
def test_a_trial_token_reaches_its_own_trial_and_no_other(
    app_and_trials: tuple[TestClient, list[int]], path: str
) -> None:
    client, (own, other) = app_and_trials
    headers = {"Authorization": f"Bearer {trial_token(KEY, own, 1)}"}
    mine = client.get(path.format(trial_id=own), headers=headers)
    assert mine.status_code == 200, mine.text
    theirs = client.get(path.format(trial_id=other), headers=headers)
    assert theirs.status_code == 403, theirs.text
    assert f"cannot act for trial {other}" in theirs.json()["detail"]
