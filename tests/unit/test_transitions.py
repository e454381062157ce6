"""The one writer of trial state over a real SQLite store: settling the searcher's Close/Stop
flags, with trials in every phase (no processes are started)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from trialkit.config import load_config
from trialkit.master._lifecycle import TrialPhase
from trialkit.master._policies import RunClock
from trialkit.master._searcher_router import SearcherRouter
from trialkit.master._supervisor import Supervisor
from trialkit.master._transitions import Transitions
from trialkit.store import Store, TrialState

GRID = {"name": "grid", "metric": "loss", "max_length": {"batches": 4}}


def _setup(tmp_path: Path, searcher: dict[str, Any]) -> tuple[Store, Transitions, int]:
    cfg = load_config(
        {
            "entrypoint": "python3 t.py",
            "hyperparameters": {"lr": {"type": "categorical", "vals": [0.1, 0.3]}},
            "searcher": searcher,
            "reproducibility": {"experiment_seed": 3},
        }
    ).as_dict()
    store = Store.at(tmp_path)
    exp = store.create_experiment(name="t", config=cfg)
    router = SearcherRouter(store)
    assert router.load(exp) is None
    return store, Transitions(store, Supervisor(store, tmp_path, 2), router), exp.id


def _settle(states: Transitions, store: Store, exp_id: int) -> None:
    """settle() in a thread: it must return (it once spun forever)."""
    t = threading.Thread(target=states.settle, args=(store.get_experiment(exp_id),), daemon=True)
    t.start()
    t.join(timeout=10)
    assert not t.is_alive(), "settle() did not return"


def test_a_closed_trial_whose_run_is_still_being_handled_is_left_to_its_exit(
    tmp_path: Path,
) -> None:
    """Its process is already reaped (the supervisor forgot it) while its phase still says
    RUNNING: the exit handler ends it, not settle (which spun on it, holding the engine)."""
    store, states, exp = _setup(tmp_path, GRID)
    t = store.list_trials(exp)[0]
    assert t.searcher.closed  # grid closes each trial up front in 0.37
    store.update_trial(t.id, op_complete=True)
    states.clocks[t.id] = RunClock(TrialPhase.RUNNING)
    _settle(states, store, exp)
    assert store.get_trial(t.id).state is TrialState.ACTIVE


def test_a_closed_trial_without_a_process_completes_and_the_search_goes_on(
    tmp_path: Path,
) -> None:
    store, states, exp = _setup(tmp_path, GRID)
    first = store.list_trials(exp)
    for t in first:
        store.update_trial(t.id, op_complete=True)
    _settle(states, store, exp)
    assert all(store.get_trial(t.id).state is TrialState.COMPLETED for t in first)
    drv = states.searchers.driver(exp)
    assert drv is not None and drv.shutdown  # told of every close: the grid is done
