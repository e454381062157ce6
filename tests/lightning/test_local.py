"""TrialkitCallback without a master (local mode: ``python train.py``) and its argument checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import EXAMPLES

pytest.importorskip("lightning")
torch = pytest.importorskip("torch")

from trialkit import core  # noqa: E402
from trialkit.lightning import TrialkitCallback  # noqa: E402


def _store(home: Path) -> tuple[list, list, list]:
    from tests.local_runs import ingested_store

    store = ingested_store(home)
    try:
        [exp] = store.list_experiments()
        assert exp.state.value == "COMPLETED"
        [trial] = store.list_trials(exp.id)
        return (
            store.list_metrics(trial.id, "training"),
            store.list_metrics(trial.id, "validation"),
            store.list_checkpoints(trial_id=trial.id),
        )
    finally:
        store.close()


@pytest.mark.integration
def test_example_runs_in_local_mode_with_the_trainers_limits(tmp_path: Path) -> None:
    env = {**os.environ, "TRIALKIT_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    env.pop("TRIALKIT_CLUSTER_INFO", None)
    proc = subprocess.run(
        [sys.executable, "train.py"],
        cwd=EXAMPLES / "lightning_mnist",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    training, validation, checkpoints = _store(tmp_path / "home")
    # max_epochs=2 of 20 batches; a report every 5 batches, a validation per epoch
    assert [m.steps_completed for m in training] == list(range(5, 41, 5))
    assert [m.steps_completed for m in validation] == [20, 40]
    assert [c.steps_completed for c in checkpoints] == [40]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"train_metrics_report_period": 0}, "train_metrics_report_period: got 0"),
        ({"train_metrics_report_period": "step"}, "train_metrics_report_period: got 'step'"),
        ({"checkpoint_period": -1}, "checkpoint_period: got -1; expected a number >= 0"),
    ],
)
def test_bad_arguments_name_the_argument(
    kwargs: dict, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIALKIT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRIALKIT_CLUSTER_INFO", raising=False)
    with core.init() as core_context, pytest.raises(ValueError, match=message):
        TrialkitCallback(core_context, **kwargs)


def test_epoch_report_period_reports_once_an_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lightning.pytorch as pl

    monkeypatch.setenv("TRIALKIT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRIALKIT_CLUSTER_INFO", raising=False)
    monkeypatch.syspath_prepend(str(EXAMPLES / "lightning_mnist"))
    import train  # the example's module and data

    with core.init() as core_context:
        callback = TrialkitCallback(core_context, train_metrics_report_period="epoch")
        trainer = pl.Trainer(
            accelerator="cpu",
            max_epochs=2,
            callbacks=[callback],
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(train.MNISTModule(16, 0.0, 0.05), datamodule=train.SyntheticMNIST(32))
    training, validation, _ = _store(tmp_path / "home")
    assert [m.steps_completed for m in training] == [20, 40]
    assert all({"loss", "batches", "epochs"} <= m.values.keys() for m in training)
    assert [m.values["epochs"] for m in training] == [1.0, 2.0]
    assert [m.steps_completed for m in validation] == [20, 40]  # no sanity-check report
