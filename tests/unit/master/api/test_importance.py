"""GET /api/v1/experiments/{id}/importance: a search's hyperparameter importance by optuna's
estimators, on a real store behind a real master app; and without optuna, an answer saying so
(a fresh interpreter where optuna cannot be imported)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.inprocess_master import inprocess_master
from trialkit.config import parse_config
from trialkit.store import NewMetric, Store, TrialState

CONFIG = {
    "searcher": {"name": "random", "metric": "loss", "max_trials": 40},
    "entrypoint": "python3 train.py",
    "hyperparameters": {
        "lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1},
        "layers": {"type": "int", "minval": 1, "maxval": 8},
        "opt": {"type": "categorical", "vals": ["sgd", "adam", "rmsprop"]},
        "model": {"width": {"type": "double", "minval": 0.0, "maxval": 1.0}},
        "batch_size": 32,
    },
}


def _search(store: Store, trials: int) -> int:
    """A finished random search in which ``layers`` alone decides the loss (the others vary
    at random, and add at most 1 % of its range); the experiment's id."""
    exp = store.create_experiment(name="importance", config=parse_config(CONFIG).as_dict())
    rng = random.Random(7)
    for i in range(trials):
        hp = {
            "lr": 10 ** rng.uniform(-4, -1),
            "layers": rng.randint(1, 8),
            "opt": rng.choice(["sgd", "adam", "rmsprop"]),
            "model": {"width": rng.random()},
            "batch_size": 32,
        }
        t = store.create_trial(
            experiment_id=exp.id, request_id=uuid.uuid4().hex, hparams=hp, seed=i
        )
        loss = hp["layers"] + 0.07 * rng.random()
        store.add_metrics([NewMetric(t.id, "validation", 100, {"loss": loss})])
        store.update_trial(t.id, state=TrialState.COMPLETED, run_id=1)
    return int(exp.id)


def _importance(api: Any, exp_id: int) -> dict[str, Any]:
    resp = api.call("GET", f"/api/v1/experiments/{exp_id}/importance")
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def test_the_hyperparameter_that_decides_the_metric_ranks_first(tmp_path: Path) -> None:
    pytest.importorskip("optuna")
    with inprocess_master(tmp_path) as api:
        got = _importance(api, _search(api.store, 40))
    expected = "fANOVA (optuna)" if _installed("sklearn") else "PED-ANOVA (optuna)"
    assert got["estimator"] == expected
    assert got["metric"] == "loss" and got["trials"] == 40
    names = [r["name"] for r in got["importances"]]
    # every searched hyperparameter, by dotted name; the constant batch_size is not searched
    assert sorted(names) == ["layers", "lr", "model.width", "opt"]
    assert names[0] == "layers"
    assert got["importances"][0]["importance"] > 0.5


def test_fanova_is_the_estimator_where_scikit_learn_is_installed(tmp_path: Path) -> None:
    pytest.importorskip("optuna")
    pytest.importorskip("sklearn", reason="optuna's fANOVA needs scikit-learn")
    with inprocess_master(tmp_path) as api:
        got = _importance(api, _search(api.store, 40))
    assert got["estimator"] == "fANOVA (optuna)"
    assert got["importances"][0]["name"] == "layers"


def test_too_few_trials_is_an_answer_that_says_so(tmp_path: Path) -> None:
    pytest.importorskip("optuna")
    with inprocess_master(tmp_path) as api:
        got = _importance(api, _search(api.store, 2))
    assert got["estimator"] is None and got["importances"] == []
    assert got["reason"] == "needs 3 trials with a loss (2 so far)"


def test_without_optuna_the_master_answers_that_it_cannot(tmp_path: Path) -> None:
    """A fresh interpreter in which ``import optuna`` fails, as where it is not installed."""
    code = (
        "import sys, json\n"
        "sys.modules['optuna'] = None  # import optuna raises ImportError\n"
        "from pathlib import Path\n"
        "from tests.inprocess_master import inprocess_master\n"
        "from tests.unit.master.api.test_importance import _importance, _search\n"
        "with inprocess_master(Path(sys.argv[1])) as api:\n"
        "    print(json.dumps(_importance(api, _search(api.store, 5))))\n"
    )
    root = Path(__file__).resolve().parents[4]
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {
        "estimator": None,
        "reason": "optuna is not installed in the master's environment",
        "metric": "loss",
        "trials": 5,
        "importances": [],
    }


def _installed(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True
