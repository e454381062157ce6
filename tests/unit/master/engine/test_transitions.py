"""The one writer of trial state over a real SQLite store: settling the searcher's Close/Stop
flags, with trials in every phase (no processes are started)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from trialkit.config import load_config
from trialkit.master.engine._lifecycle import TrialEvent, TrialPhase
from trialkit.master.engine._policies import RunClock
from trialkit.master.engine._transitions import Transitions
from trialkit.master.runs._process_table import Supervisor
from trialkit.master.search._router import SearcherRouter
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


def test_trials_ending_together_are_settled_in_one_pass(tmp_path: Path) -> None:
    # Each ending trial's searcher call settled the experiment at once, reading all its trials:
    # 200 trials ending in one engine tick read 40,000 and held the master for seconds.
    random = {"name": "random", "metric": "loss", "max_trials": 8, "max_concurrent_trials": 8}
    store, states, exp = _setup(tmp_path, {**random, "max_length": 4})
    trials = store.list_trials(exp)
    assert len(trials) == 8
    for t in trials:
        states.clocks[t.id] = RunClock(TrialPhase.RUNNING)
    reads: list[int] = []
    list_trials = store.list_trials

    def counted(experiment_id: int | None = None) -> list[Any]:
        reads.append(experiment_id or 0)
        return list_trials(experiment_id)

    store.list_trials = counted  # type: ignore[method-assign]
    with states.settling_once():
        for t in trials:
            states.trial(store.get_trial(t.id), TrialEvent.EXITED_COMPLETED)
    assert [store.get_trial(t.id).state for t in trials] == [TrialState.COMPLETED] * 8
    assert len(reads) <= 2, reads  # one pass (and one more if that pass moved a trial)
