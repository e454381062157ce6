"""The store's read models on SQLite and PostgreSQL: per-trial latest and best metrics and
latest checkpoints, each in one statement, so describe runs a fixed number of statements."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import event

from tests.inprocess_master import inprocess_master
from trialkit.config import parse_config
from trialkit.store import NewMetric, Store


class Statements:
    """Counts the SQL statements an engine executes."""

    def __init__(self, engine: Any) -> None:
        self.count = 0
        self._lock = threading.Lock()
        event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, *_: Any) -> None:
        with self._lock:
            self.count += 1


def _trials(store: Store, experiment_id: int, n: int) -> list[int]:
    ids = []
    for i in range(n):
        t = store.create_trial(
            experiment_id=experiment_id, request_id=uuid.uuid4().hex, hparams={"i": i}, seed=i
        )
        ids.append(t.id)
    return ids


def _checkpoint(store: Store, trial_id: int, experiment_id: int, steps: int) -> str:
    ckpt = str(uuid.uuid4())
    store.add_checkpoint(
        uuid=ckpt,
        trial_id=trial_id,
        experiment_id=experiment_id,
        run_id=1,
        steps_completed=steps,
        metadata={},
        resources={},
        storage={"type": "shared_fs", "host_path": "/tmp"},
    )
    return ckpt


def test_trial_views_pick_latest_and_best(store: Store) -> None:
    exp = store.create_experiment(name="views", config={})
    a, b, c = _trials(store, exp.id, 3)
    store.add_metrics(
        [
            NewMetric(a, "validation", 1, {"loss": 3}),
            NewMetric(a, "validation", 2, {"loss": float("nan")}),  # stored as "NaN": skipped
            NewMetric(a, "validation", 3, {"loss": 2.5, "acc": 0.1}),
            NewMetric(a, "validation", 4, {"loss": 2.75}),
            NewMetric(a, "training", 4, {"loss": 9.0}),
            NewMetric(a, "custom", 5, {"loss": -100.0}),  # neither latest shown nor compared
            NewMetric(b, "validation", 1, {"loss": True}),  # a boolean is not a value
            NewMetric(b, "validation", 2, {"other": 1.0}),
        ]
    )
    first = _checkpoint(store, a, exp.id, 10)
    _checkpoint(store, a, exp.id, 5)
    views = store.trial_views(metric="loss", smaller_is_better=True, experiment_id=exp.id)
    assert [v.trial.id for v in views] == [a, b, c]
    va, vb, vc = views
    assert va.latest_training is not None and va.latest_training.values == {"loss": 9.0}
    assert va.latest_validation is not None and va.latest_validation.steps_completed == 4
    assert va.best_validation == 2.5
    assert va.latest_checkpoint == first
    assert vb.best_validation is None
    assert vb.latest_validation is not None and vb.latest_validation.values == {"other": 1.0}
    assert (vc.latest_training, vc.latest_validation, vc.best_validation) == (None, None, None)

    [larger] = store.trial_views(metric="loss", smaller_is_better=False, trial_id=a)
    assert larger.best_validation == 3.0
    [no_metric] = store.trial_views(metric=None, smaller_is_better=True, trial_id=a)
    assert no_metric.best_validation is None and no_metric.latest_training is not None
    assert store.best_validation(metric="loss", smaller_is_better=True, experiment_id=exp.id) == 2.5
    assert store.best_validation(metric='odd"key', smaller_is_better=True, trial_id=a) is None


def test_trial_views_run_the_same_statements_for_3_and_30_trials(store: Store) -> None:
    counter = Statements(store._engine)
    counts = []
    for n in (3, 30):
        exp = store.create_experiment(name=f"n{n}", config={})
        for tid in _trials(store, exp.id, n):
            store.add_metrics(
                [
                    NewMetric(tid, g, s, {"loss": 1.0 / s})
                    for g in ("training", "validation")
                    for s in (1, 2)
                ]
            )
            _checkpoint(store, tid, exp.id, 2)
        before = counter.count
        views = store.trial_views(metric="loss", smaller_is_better=True, experiment_id=exp.id)
        counts.append(counter.count - before)
        assert len(views) == n and all(v.best_validation == 0.5 for v in views)
    assert counts[0] == counts[1] <= 4  # trials, metrics, checkpoints (and the transaction)


def test_describe_runs_a_fixed_number_of_statements(tmp_path: Path) -> None:
    with inprocess_master(tmp_path) as api:
        counter = Statements(api.store._engine)
        counts = {}
        for n in (2, 20):
            config = parse_config(
                {
                    "searcher": {"name": "random", "metric": "loss", "max_trials": n},
                    "entrypoint": "python3 train.py",
                }
            )  # the master stores a full config, as it does at create
            exp = api.store.create_experiment(name=f"n{n}", config=config.as_dict())
            for tid in _trials(api.store, exp.id, n):
                api.store.add_metrics([NewMetric(tid, "validation", 1, {"loss": float(tid)})])
            before = counter.count
            resp = api.call("GET", f"/api/v1/experiments/{exp.id}")
            counts[n] = counter.count - before
            assert resp.status_code == 200
            desc = resp.json()
            assert desc["best_trial"]["value"] == min(t["best_validation"] for t in desc["trials"])
            before = counter.count
            assert api.call("GET", f"/api/v1/experiments/{exp.id}/summary").status_code == 200
            assert counter.count - before < counts[n]  # the summary skips the checkpoint list
        assert counts[2] == counts[20]
