"""The master's searcher driver over a real SQLite store: a restarted master continues the same
search, including after a crash between a trial's row update and the searcher's state save; a
custom searcher's process (a real child) is called off the engine's lock."""

from __future__ import annotations

import queue
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests import paths
from trialkit import _modeldir
from trialkit.config import load_config
from trialkit.master.search._driver import OffLock, SearcherDriver
from trialkit.searcher import SearcherError
from trialkit.store import Store, Trial, TrialState

EXAMPLE = paths.EXAMPLES / "custom_searcher"


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


def _custom_setup(tmp_path: Path, model_dir: Path, spec: str) -> tuple[Store, int]:
    """An experiment whose custom searcher (``spec`` in ``model_dir``) runs in its own process:
    HalfwayRandomSearch kwargs for two trials, one at a time."""
    cfg = load_config(
        {
            "name": "c",
            "entrypoint": "python3 t.py",
            "searcher": {
                "name": "custom",
                "metric": "loss",
                "unit": "batches",
                "custom_searcher_class": spec,
                "custom_searcher_kwargs": {"max_trials": 2, "max_length": 20, "max_concurrent": 1},
            },
            "reproducibility": {"experiment_seed": 3},
        }
    ).as_dict()
    store = Store.at(tmp_path / "store")
    exp = store.create_experiment(name="c", config=cfg, model_def=_modeldir.pack(model_dir))
    return store, exp.id


def test_a_custom_searcher_is_told_again_what_a_crash_lost(tmp_path: Path) -> None:
    """A trial ended (its row written) and the master died before the searcher's answer was
    saved: a restarted master tells the custom searcher's process the close again, and the
    search goes on (here: it creates the second trial)."""
    store, exp = _setup_custom(tmp_path)
    drv = _driver(store, exp)
    [first] = store.list_trials(exp)
    drv.close()
    store.update_trial(first.id, state=TrialState.CANCELED)  # written, then the master died
    again = _driver(store, exp)
    try:
        assert again.method.is_closed(first.request_id)
        assert len(store.list_trials(exp)) == 2
    finally:
        again.close()


def _setup_custom(tmp_path: Path) -> tuple[Store, int]:
    return _custom_setup(tmp_path, EXAMPLE, "searcher:HalfwayRandomSearch")


def _hanging_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call_timeout: int
) -> tuple[Store, int]:
    """An experiment whose custom searcher sleeps a minute in on_validation_completed, given
    ``call_timeout`` seconds per call."""
    model = tmp_path / "model"
    shutil.copytree(EXAMPLE, model)
    (model / "hangs.py").write_text(
        "import time\n"
        "from searcher import HalfwayRandomSearch\n"
        "class Hangs(HalfwayRandomSearch):\n"
        "    def on_validation_completed(self, *args):\n"
        "        time.sleep(60)\n"
    )
    monkeypatch.setenv("TRIALKIT_SEARCHER_CALL_TIMEOUT", str(call_timeout))
    return _custom_setup(tmp_path, model, "hangs:Hangs")


def test_a_hung_custom_searcher_is_called_off_the_lock_and_fails_its_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an OffLock, each event returns at once; the process is asked on the experiment's own
    thread while the lock stays free; its answers are applied, in event order, under the lock;
    a hang becomes the one-line error handed to ``answered`` after the call timeout."""
    store, exp = _hanging_setup(tmp_path, monkeypatch, call_timeout=2)
    lock = threading.Lock()  # the engine's is an RLock; a Lock tells who holds it
    answers: queue.Queue[tuple[int, str | None, int | None]] = queue.Queue()

    def answered(experiment_id: int, error: SearcherError | None, trial: Trial | None) -> None:
        assert lock.locked()  # applied under the lock (the test thread does not hold it)
        answers.put((experiment_id, str(error) if error else None, trial.id if trial else None))

    with lock:
        drv = SearcherDriver(store, store.get_experiment(exp), OffLock(lock, answered))
    try:
        assert answers.get(timeout=60) == (exp, None, None)  # start + initial operations
        [trial] = store.list_trials(exp)
        assert trial.searcher.op_length == 10
        with lock:
            started = time.monotonic()
            drv.validation_completed(trial, {"loss": 0.5}, 10)
            drv.closed(trial)  # in turn: after the validation's answer
            assert time.monotonic() - started < 1.0
            assert drv.busy
        time.sleep(1.0)
        assert not lock.locked() and drv.busy  # free while the process hangs
        drv.wait_for_answers()  # both answered: the second fails at once
        assert not drv.busy
        hung = (
            exp,
            "custom searcher Hangs.on_validation_completed: no answer within 2s"
            " (its process was killed)",
            trial.id,
        )
        assert answers.get_nowait() == hung
        assert answers.get_nowait() == hung  # the close after it: failed for good
    finally:
        drv.close()
        drv.join(timeout=10)


def test_letting_go_of_a_hung_custom_searcher_kills_it_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The experiment killed (or ended) while its searcher hangs: ``close`` returns at once,
    the process is killed rather than waited for, and its answer is dropped."""
    store, exp = _hanging_setup(tmp_path, monkeypatch, call_timeout=60)
    lock = threading.Lock()
    answers: queue.Queue[SearcherError | None] = queue.Queue()
    drv = SearcherDriver(
        store, store.get_experiment(exp), OffLock(lock, lambda _e, error, _t: answers.put(error))
    )
    assert answers.get(timeout=60) is None
    [trial] = store.list_trials(exp)
    drv.validation_completed(trial, {"loss": 0.5}, 10)
    time.sleep(1.0)
    assert drv.busy
    started = time.monotonic()
    with lock:
        drv.close()
    drv.join(timeout=10)
    assert time.monotonic() - started < 5.0
    assert not drv.busy
    assert answers.empty()
    before = store.get_searcher_state(exp)
    drv.validation_completed(trial, {"loss": 0.5}, 10)  # told after: dropped too
    assert store.get_searcher_state(exp) == before and answers.empty()
