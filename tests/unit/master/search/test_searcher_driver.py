"""The master's searcher driver over a real SQLite store: a restarted master continues the same
search, including after a crash between a trial's row update and the searcher's state save."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trialkit.config import load_config
from trialkit.master.search._driver import SearcherDriver
from trialkit.store import Store, TrialState


def _setup(tmp_path: Path, searcher: dict[str, Any]) -> tuple[Store, int]:
    cfg = load_config(
        {
            "name": "d",
            "entrypoint": "python3 t.py",
            "hyperparameters": {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}},
            "searcher": searcher,
            "reproducibility": {"experiment_seed": 3},
        }
    ).as_dict()
    store = Store.at(tmp_path)
    exp = store.create_experiment(name="d", config=cfg)
    return store, exp.id


def _driver(store: Store, exp_id: int) -> SearcherDriver:
    return SearcherDriver(store, store.get_experiment(exp_id))


ASHA = {"name": "adaptive_asha", "metric": "loss", "max_length": {"batches": 16}, "max_trials": 4}


def test_restart_reloads_the_search_without_new_trials(tmp_path: Path) -> None:
    store, exp = _setup(tmp_path, ASHA)
    drv = _driver(store, exp)
    trials = store.list_trials(exp)
    assert len(trials) == 4 and all(
        t.searcher.op_length and not t.searcher.op_complete for t in trials
    )
    t = trials[0]
    store.update_trial(t.id, op_complete=True)
    drv.validation_completed(store.get_trial(t.id), {"loss": 0.5}, t.searcher.op_length)
    before = [
        (x.request_id, x.searcher.op_length, x.searcher.op_complete) for x in store.list_trials(exp)
    ]
    again = _driver(store, exp)  # a restarted master
    assert [
        (x.request_id, x.searcher.op_length, x.searcher.op_complete) for x in store.list_trials(exp)
    ] == before
    assert again.method.save() == drv.method.save()


def test_lost_metric_reopens_the_operation(tmp_path: Path) -> None:
    store, exp = _setup(tmp_path, ASHA)
    _driver(store, exp)
    t = store.list_trials(exp)[0]
    store.update_trial(t.id, op_complete=True)  # the engine wrote this, then the master died
    _driver(store, exp)
    assert store.get_trial(t.id).searcher.op_complete is False  # the trial will report it again


def test_lost_exit_is_told_so_the_search_can_finish(tmp_path: Path) -> None:
    store, exp = _setup(tmp_path, {"name": "random", "metric": "loss", "max_trials": 2,
                                   "max_concurrent_trials": 1})  # fmt: skip
    _driver(store, exp)
    [first] = store.list_trials(exp)
    store.update_trial(first.id, state=TrialState.ERROR)  # written, then the master died
    drv = _driver(store, exp)
    trials = store.list_trials(exp)
    assert len(trials) == 2  # the exit reached random search, which created the next trial
    store.update_trial(trials[1].id, state=TrialState.COMPLETED)
    drv.closed(store.get_trial(trials[1].id))
    assert drv.shutdown and not drv.failure
