"""Seed 002's Generic API (``trialkit.generic`` / ``det.generic``) in local mode: each call
lands where the Core API puts it (the store under $TRIALKIT_HOME, checkpoint storage)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.local_runs import ingested_store
from trialkit import generic
from trialkit.errors import InvalidHP
from trialkit.store import Store


def _only_trial(home: Path) -> tuple[Store, int]:
    store = ingested_store(home)
    (exp,) = store.list_experiments()
    (trial,) = store.list_trials(exp.id)
    return store, trial.id


def test_generic_calls_land_in_the_core_api(trialkit_home: Path) -> None:
    with generic.init() as context:
        assert context.training.trial_seed == 0 and context.training.hparams == {}
        assert context.latest_checkpoint is None
        assert context.should_preempt() is False and context.should_preempt(block=False) is False
        op = context.training.basic_search()
        assert op is not None and op.epochs == 1  # the local searcher's one op
        context.training.report_training_metrics(batches_trained=4, metrics={"loss": 2.0})
        context.training.report_validation_metrics(batches_trained=4, metrics={"loss": 1.5})
        op.report_progress(1)
        op.complete(1.5)
        with context.checkpoint.save_path() as path:
            (path / "my_checkpoint").write_text("weights")
        uuid = context.checkpoint.last_storage_id
        assert context.training.basic_search() is None  # no more work for this trial
    store, trial_id = _only_trial(trialkit_home)
    try:
        groups = {m.group: (m.steps_completed, m.values) for m in store.list_metrics(trial_id)}
        assert groups["training"] == (4, {"loss": 2.0})
        assert groups["validation"] == (4, {"loss": 1.5})
        [ckpt] = store.list_checkpoints(trial_id=trial_id)
        assert ckpt.uuid == uuid and ckpt.metadata["steps_completed"] == 4  # from batches_trained
    finally:
        store.close()


def test_batches_trained_is_required(trialkit_home: Path) -> None:
    with generic.init() as context:
        with pytest.raises(TypeError, match="batches_trained"):
            context.training.report_training_metrics(metrics={"loss": 1.0})


def test_invalid_hp_ends_the_trial_as_an_early_exit(trialkit_home: Path) -> None:
    with generic.init() as context:
        context.training.report_training_metrics(batches_trained=1, metrics={"loss": 1.0})
        raise InvalidHP("learning rate too large")
    store, trial_id = _only_trial(trialkit_home)
    try:
        assert store.get_trial(trial_id).searcher.early_exit == "INVALID_HP"
    finally:
        store.close()
