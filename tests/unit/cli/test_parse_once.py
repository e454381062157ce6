"""One experiment config is validated once per process on its way from ``trialkit experiment
create`` to the trial's loop: the CLI, the master (creation, search, launch) and the trial each
parse it once and pass the typed config on. All three run in this process here, against a real
store and app, so the count covers every step."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.inprocess_master import TOKEN, InProcessMaster, inprocess_master, served
from trialkit.cli import _common, _experiment, cli
from trialkit.client import MasterClient
from trialkit.config import parse_count
from trialkit.contract import INFO_ENV, get_cluster_info
from trialkit.master.runs._launch import build_launch
from trialkit.master.search._experiment_config import config_of

_CONFIG = """\
name: parse-once
entrypoint: python3 train.py
hyperparameters:
  lr: {type: log, minval: -3, maxval: -1, base: 10}
searcher: {name: random, metric: loss, max_trials: 2, max_length: {batches: 10}}
checkpoint_storage: {save_trial_best: 2}
"""


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        yield m


def _create(api: InProcessMaster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """``trialkit experiment create`` (the real command) against the in-process master."""
    (tmp_path / "config.yaml").write_text(_CONFIG)
    model = tmp_path / "model"
    model.mkdir()
    (model / "train.py").write_text("print('not run')\n")
    with served(api.app) as url:
        client = MasterClient(url, TOKEN)
        for module in (_common, _experiment):
            monkeypatch.setattr(module, "get_client", lambda start=True: client)
        result = CliRunner().invoke(
            cli, ["experiment", "create", str(tmp_path / "config.yaml"), str(model)]
        )
    assert result.exit_code == 0, result.output
    return int(result.output.split("Created experiment ")[1].split()[0])


def test_a_config_is_parsed_once_per_process_from_create_to_the_trial(
    api: InProcessMaster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = parse_count()
    exp_id = _create(api, tmp_path, monkeypatch)
    assert parse_count() - before == 2  # the CLI's and the master's

    # The master launches a trial: it reads the config again and again (the engine, the run
    # directory, the launch), always the typed one it made at creation.
    exp = api.store.get_experiment(exp_id)
    trial = api.store.list_trials(exp_id)[0]
    exp = dataclasses.replace(exp, config=api.store.config_with_secrets(exp_id))
    for _ in range(3):
        assert config_of(exp).searcher.max_trials == 2
    info_file = tmp_path / "trial" / "cluster_info.json"
    info_file.parent.mkdir()
    build_launch(
        experiment=exp,
        trial=trial,
        run_id=1,
        workdir=tmp_path / "trial" / "model",
        info_file=info_file,
        master_url="http://127.0.0.1:9",
        token=TOKEN,
        master_file=tmp_path / "master.json",
        home=tmp_path / "master",
        slot_ids=[0],
        gpus=False,
        latest_checkpoint=None,
        steps_completed=0,
    )
    assert parse_count() - before == 2

    # The trial reads its cluster info and parses the config once, however often it is read.
    monkeypatch.setenv(INFO_ENV, str(info_file))
    info = get_cluster_info()
    assert info is not None and info.trial is not None
    for _ in range(3):
        typed = info.trial.experiment_config
        assert typed.checkpoint_storage is not None
        assert typed.checkpoint_storage.save_trial_best == 2
    assert parse_count() - before == 3
