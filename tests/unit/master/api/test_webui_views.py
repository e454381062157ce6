"""The web UI's server-side view cache: the experiment summary and the chart's metric series are
built once and reused until the experiment, a trial, a metric or a checkpoint changes, on a
real store behind a real master app."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.inprocess_master import inprocess_master
from trialkit.config import parse_config
from trialkit.master.api._views import ViewCache
from trialkit.store import NewMetric, TrialState

CONFIG = {
    "searcher": {"name": "random", "metric": "loss", "max_trials": 2},
    "entrypoint": "python3 train.py",
}


def test_view_cache_rebuilds_only_when_the_fingerprint_changes() -> None:
    cache = ViewCache(size=2)
    builds: list[str] = []

    def build(value: str) -> str:
        builds.append(value)
        return value

    assert cache.get("a", 1, lambda: build("a1")) == "a1"
    assert cache.get("a", 1, lambda: build("again")) == "a1"
    assert cache.get("a", 2, lambda: build("a2")) == "a2"
    cache.get("b", 1, lambda: build("b1"))
    cache.get("c", 1, lambda: build("c1"))  # past size 2: "a" (least recently used) goes
    assert cache.get("a", 2, lambda: build("a2 again")) == "a2 again"
    assert builds == ["a1", "a2", "b1", "c1", "a2 again"]


def test_summary_and_metrics_follow_every_change(tmp_path: Path) -> None:
    with inprocess_master(tmp_path) as api:
        store = api.store
        exp = store.create_experiment(name="cache", config=parse_config(CONFIG).as_dict())
        trial = store.create_trial(
            experiment_id=exp.id, request_id=uuid.uuid4().hex, hparams={"lr": 0.1}, seed=1
        )

        def summary() -> dict:
            resp = api.call("GET", f"/api/v1/experiments/{exp.id}/summary")
            assert resp.status_code == 200
            return resp.json()

        def points() -> list[float]:
            resp = api.call("GET", f"/api/v1/experiments/{exp.id}/metrics")
            assert resp.status_code == 200
            return [v for s in resp.json()["series"] for v in s["values"]]

        assert summary()["trials"][0]["best_validation"] is None
        assert points() == []
        store.add_metrics([NewMetric(trial.id, "validation", 10, {"loss": 0.5})])
        assert summary()["trials"][0]["best_validation"] == 0.5
        assert points() == [0.5]
        assert points() == [0.5]  # served again from the cache
        store.add_metrics([NewMetric(trial.id, "validation", 20, {"loss": 0.25})])
        assert summary()["best_trial"]["value"] == 0.25
        assert points() == [0.5, 0.25]
        store.update_trial(trial.id, state=TrialState.COMPLETED, run_id=1)
        assert summary()["trials"][0]["state"] == "COMPLETED"
        ckpt = str(uuid.uuid4())
        store.add_checkpoint(
            uuid=ckpt,
            trial_id=trial.id,
            experiment_id=exp.id,
            run_id=1,
            steps_completed=20,
            metadata={},
            resources={},
            storage={},
        )
        assert summary()["trials"][0]["latest_checkpoint"] == ckpt
        store.update_experiment(exp.id, progress=0.5)
        assert summary()["experiment"]["progress"] == 0.5
