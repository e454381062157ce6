"""searcher.name: optuna through a real master: TPE picks the trials, MedianPruner stops some
(delivered as a preemption; they end COMPLETED), and the study survives a master SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from trialkit.client import start_background
from trialkit.store import Store

from .conftest import Master, write_script
from .test_search import REPORTS_TRIAL, _validation_steps

pytest.importorskip("optuna")
pytestmark = pytest.mark.integration


def test_optuna_tpe_with_median_pruner_survives_a_master_restart(
    master: Master, tmp_path: Path
) -> None:
    d = tmp_path / "model"
    write_script(d, "trial.py", REPORTS_TRIAL)
    cfg = {
        "name": "optuna",
        "entrypoint": "python3 trial.py",
        "hyperparameters": {
            "lr": {"type": "double", "minval": 0.0, "maxval": 1.0},
            "unused": {"type": "categorical", "vals": ["a", "b"]},
        },
        "searcher": {
            "name": "optuna",
            "metric": "loss",
            "time_metric": "batches",
            "max_time": 30,
            "max_trials": 6,
            "max_concurrent_trials": 2,
            "pruner": "MedianPruner",
            "pruner_kwargs": {"n_startup_trials": 2, "n_warmup_steps": 5},
        },
        "environment": {"environment_variables": ["MAX=30"]},
        "reproducibility": {"experiment_seed": 11},
        "max_restarts": 0,
    }
    exp = master.create(cfg, d)
    master.wait_for(
        lambda: sum(t["state"] == "COMPLETED" for t in master.describe(exp)["trials"]) >= 2,
        timeout=90,
        what="two finished trials",
    )
    os.kill(master.pid(), signal.SIGKILL)
    time.sleep(0.5)
    master.client = start_background(master.home, slots=2)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=120)
    assert desc["experiment"]["state"] == "COMPLETED", desc["experiment"]
    trials = desc["trials"]
    assert len(trials) == 6 and all(t["state"] == "COMPLETED" for t in trials)
    assert all(0.0 <= t["hparams"]["lr"] <= 1.0 and t["hparams"]["unused"] in "ab" for t in trials)

    # The study was persisted with the experiment: one Optuna trial per trialkit trial, each
    # told COMPLETE (trained to max_time) or PRUNED (stopped by the searcher).
    state = Store.at(master.home).get_searcher_state(exp)
    assert state is not None
    strategy = state["method"]["strategy"]
    assert sorted(strategy["trial_ids"]) == sorted(t["request_id"] for t in trials)
    told = strategy["told"]
    for t in trials:
        last = _validation_steps(master, t["id"])[-1]
        if told[t["request_id"]] == "PRUNED":
            assert t["stop_requested"] and last <= 30
        else:
            assert told[t["request_id"]] == "COMPLETE" and last == 30
    assert "PRUNED" in told.values(), "MedianPruner pruned nothing"


def test_a_search_that_cannot_load_ends_the_experiment_error(
    master: Master, tmp_path: Path
) -> None:
    """An unknown sampler is found only when the search is built: the experiment ends ERROR
    (through the one state writer), with its reason, instead of staying ACTIVE."""
    d = tmp_path / "model"
    write_script(d, "trial.py", REPORTS_TRIAL)
    cfg = {
        "entrypoint": "python3 trial.py",
        "hyperparameters": {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}},
        "searcher": {"name": "optuna", "metric": "loss", "time_metric": "batches",
                     "max_time": 30, "max_trials": 2, "sampler": "NoSuchSampler"},
    }  # fmt: skip
    (d / "_config.json").write_text(json.dumps(cfg))
    out = master.cli("experiment", "create", str(d / "_config.json"), str(d), check=False)
    assert out.returncode != 0, out.stdout
    assert "searcher.sampler: got 'NoSuchSampler'" in out.stderr, out.stderr
    assert "internal error" not in out.stderr
    [exp] = master.client.list_experiments().experiments
    assert exp.state == "ERROR" and exp.ended_at is not None
    assert exp.error is not None and "could not start" in exp.error
    assert "searcher.sampler: got 'NoSuchSampler'" in exp.error
