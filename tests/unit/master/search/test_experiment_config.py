"""The master reads an experiment's searcher section through the typed config; an unmanaged
experiment (a run outside the master) whose stored config does not parse falls back clearly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trialkit.master.api._views import describe_experiment
from trialkit.master.search._experiment_config import searcher_config_of
from trialkit.store import Store

#: Not an experiment config: no entrypoint check matters, but an unknown key fails to parse.
_PARTIAL = {"name": "local: train.py", "written_by": "an older trialkit", "hyperparameters": {}}


def _store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'trialkit.db'}")


def _unmanaged(store: Store, config: dict[str, Any]) -> int:
    return store.create_experiment(name="local", config=config, unmanaged=True).id


def test_an_unmanaged_config_that_does_not_parse_keeps_its_searcher(tmp_path: Path) -> None:
    store = _store(tmp_path)
    searcher = {"name": "single", "metric": "loss", "smaller_is_better": False}
    exp_id = _unmanaged(store, {**_PARTIAL, "searcher": searcher})
    summary = describe_experiment(store, exp_id).searcher
    assert (summary.name, summary.metric, summary.smaller_is_better) == ("single", "loss", False)
    assert (summary.generation, summary.max_trials) == ("0.38", 1)


def test_an_unmanaged_searcher_that_does_not_parse_reads_as_single(tmp_path: Path) -> None:
    store = _store(tmp_path)
    for searcher in ({"name": "bayes", "metric": "loss"}, "single", None):
        exp_id = _unmanaged(store, {**_PARTIAL, "searcher": searcher})
        summary = describe_experiment(store, exp_id).searcher
        assert (summary.name, summary.metric, summary.smaller_is_better) == ("single", None, True)
        assert describe_experiment(store, exp_id).best_trial is None


def test_local_mode_config_parses_as_is(tmp_path: Path) -> None:
    store = _store(tmp_path)
    config = {
        "name": "local: train.py",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": None, "smaller_is_better": True},
        "hyperparameters": {},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(tmp_path)},
    }
    exp = store.get_experiment(_unmanaged(store, config))
    assert searcher_config_of(exp).metric is None


def test_a_managed_config_that_does_not_parse_is_read_by_its_searcher_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A read (describe, charts, GC) never fails on a stored config that does not parse."""
    store = _store(tmp_path)
    searcher = {"name": "single", "metric": "loss", "smaller_is_better": False}
    exp = store.create_experiment(name="x", config={**_PARTIAL, "searcher": searcher})
    with caplog.at_level("WARNING"):
        got = searcher_config_of(exp)
    assert (got.metric, got.smaller_is_better) == ("loss", False)
    assert "written_by" in caplog.text
