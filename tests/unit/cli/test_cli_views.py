"""The CLI's views against an in-process master (a real store and app, no trial processes):
what ``experiment list``, ``experiment describe`` (text and ``--json``) and ``trial describe``
show of trials, checkpoints and hyperparameters."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.inprocess_master import TOKEN, InProcessMaster, inprocess_master, served
from trialkit.cli import _common, _experiment, _trial, cli
from trialkit.client import MasterClient
from trialkit.store import NewMetric


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        yield m


@pytest.fixture
def runner(api: InProcessMaster, monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    with served(api.app) as url:
        client = MasterClient(url, TOKEN)
        for module in (_common, _experiment, _trial):
            monkeypatch.setattr(module, "get_client", lambda start=True: client)
        monkeypatch.setenv("COLUMNS", "80")
        yield CliRunner()


def _completed_trial(api: InProcessMaster, hparams: dict[str, Any]) -> tuple[int, int, str]:
    """An experiment with one COMPLETED trial that validated and checkpointed once."""
    exp = api.create()
    trial = api.store.create_trial(experiment_id=exp, request_id="r1", hparams=hparams, seed=1)
    api.store.update_trial(trial.id, run_id=1, state="COMPLETED")
    api.store.add_metrics([NewMetric(trial.id, "validation", 10, {"loss": 0.25})])
    ckpt = str(uuid.uuid4())
    api.store.add_checkpoint(
        uuid=ckpt,
        trial_id=trial.id,
        experiment_id=exp,
        run_id=1,
        steps_completed=10,
        metadata={},
        resources={"w": 1},
        storage={"type": "shared_fs", "host_path": "/tmp"},
    )
    return exp, trial.id, ckpt


def _run(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_describe_json_best_trial_carries_the_checkpoint_the_text_shows(
    runner: CliRunner, api: InProcessMaster
) -> None:
    exp, trial_id, ckpt = _completed_trial(api, {"lr": 0.1})
    text = _run(runner, "e", "describe", str(exp))
    assert f"best: trial {trial_id} loss=0.25 (lr=0.1), checkpoint {ckpt}" in text, text
    assert "1 checkpoint (trialkit checkpoint list" in text, text  # not "1 checkpoints"
    best = json.loads(_run(runner, "e", "describe", str(exp), "--json"))["best_trial"]
    assert best["trial_id"] == trial_id and best["checkpoint"] == ckpt, best


def test_experiment_list_counts_trials_by_state(runner: CliRunner, api: InProcessMaster) -> None:
    exp, _, _ = _completed_trial(api, {"lr": 0.1})
    api.store.create_trial(experiment_id=exp, request_id="r2", hparams={"lr": 0.2}, seed=2)
    lines = _run(runner, "e", "list").splitlines()
    assert lines[0].split() == ["id", "name", "state", "progress", "trials", "started", "ended"]
    row = next(ln for ln in lines if ln.split()[:1] == [str(exp)])
    states = Counter(t.state.value for t in api.store.list_trials(exp))
    assert states["COMPLETED"] == 1 and states["ACTIVE"] >= 1  # create made the first trial
    assert f"{states['ACTIVE']} active, 1 completed" in row, lines
    listed = json.loads(_run(runner, "e", "list", "--json"))
    assert listed[0]["trial_states"] == dict(states)


def test_trial_describe_has_no_blank_hparams_line(runner: CliRunner, api: InProcessMaster) -> None:
    _, trial_id, _ = _completed_trial(api, {})
    text = _run(runner, "t", "describe", str(trial_id))
    assert f"trial {trial_id} of experiment" in text
    assert not any(ln.strip() == "hparams:" for ln in text.splitlines()), text
