"""``trialkit t continue N``, run as a user would against a real master: a new experiment with
trial N's hyperparameters, searcher single, warm-started from N's latest checkpoint and running
the model directory stored with N's experiment (Determined's "Continue Trial")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from .conftest import Master, write_script

pytestmark = pytest.mark.integration

# Says which checkpoint it starts from and what it finds there, then saves its own.
SCRIPT = """
import json
import trialkit
from trialkit import core

info = trialkit.get_cluster_info()
with core.init() as ctx:
    start = info.latest_checkpoint
    if start:
        with ctx.checkpoint.restore_path(start) as path:
            print("restored", start, (path / "w").read_text(), flush=True)
    print("hparams", json.dumps(info.trial.hparams, sort_keys=True), flush=True)
    ctx.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
    with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, _):
        (path / "w").write_text(f"trained by trial {info.trial.trial_id}")
    ctx.train.report_validation_metrics(steps_completed=1, metrics={"loss": 0.5})
"""

CONFIG: dict[str, Any] = {
    "name": "to-continue",
    "entrypoint": "python3 work.py",
    "hyperparameters": {
        "lr": {"type": "categorical", "vals": [0.1, 0.2]},
        "opt": {"momentum": 0.9},
    },
    "searcher": {"name": "grid", "metric": "loss", "max_length": 1},
    "max_restarts": 0,
}


def source_trial(master: Master, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    """A finished grid search (its model directory gone, as a user's may be) and its trial with
    lr 0.2."""
    model = tmp_path / "model"
    write_script(model, "work.py", SCRIPT)
    exp = master.create(CONFIG, model)
    trials = master.wait_state(exp, {"COMPLETED"})["trials"]
    shutil.rmtree(model)
    return exp, next(t for t in trials if t["hparams"]["lr"] == 0.2)


def _created(out: str) -> int:
    return int(out.split("Created experiment ", 1)[1].split(",", 1)[0])


def test_continue_warm_starts_the_trial_with_its_hparams(master: Master, tmp_path: Path) -> None:
    source_exp, trial = source_trial(master, tmp_path)
    uuid = trial["latest_checkpoint"]
    out = master.cli("t", "continue", str(trial["id"]), "--follow").stdout
    assert f", continuing trial {trial['id']} from checkpoint {uuid}\n" in out
    assert out.rstrip().endswith("ended COMPLETED")
    new = master.describe(_created(out))
    config = new["experiment"]["config"]
    assert config["searcher"]["name"] == "single"
    assert config["searcher"]["source_checkpoint_uuid"] == uuid
    assert config["searcher"]["metric"] == "loss" and config["searcher"]["max_length"] == 1
    assert config["hyperparameters"] == {
        "lr": {"type": "const", "val": 0.2},
        "opt": {"momentum": {"type": "const", "val": 0.9}},
    }
    assert new["experiment"]["description"] == (
        f"continues trial {trial['id']} of experiment {source_exp} from checkpoint {uuid}"
    )
    [continued] = new["trials"]
    logs = master.cli("t", "logs", str(continued["id"])).stdout
    assert f"restored {uuid} trained by trial {trial['id']}" in logs  # the source's weights
    assert 'hparams {"lr": 0.2, "opt": {"momentum": 0.9}}' in logs
    model_defs = [master.client.experiment_model_def(e) for e in (source_exp, _created(out))]
    assert model_defs[0] and model_defs[0] == model_defs[1]


def test_a_config_file_and_set_change_the_continued_config(master: Master, tmp_path: Path) -> None:
    _, trial = source_trial(master, tmp_path)
    edit = tmp_path / "edit.yaml"
    edit.write_text("searcher:\n  max_length: 3\nhyperparameters:\n  lr: 0.05\n")
    before = len(master.client.list_experiments(archived=True).experiments)
    dry = master.cli(
        "t", "continue", str(trial["id"]), "--config", str(edit), "--set", "name=again", "--dry-run"
    )
    shown = json.loads(dry.stdout)
    assert shown["searcher"]["max_length"] == 3 and shown["name"] == "again"
    assert shown["hyperparameters"]["lr"] == {"type": "const", "val": 0.05}
    assert shown["hyperparameters"]["opt"] == {"momentum": {"type": "const", "val": 0.9}}
    assert len(master.client.list_experiments(archived=True).experiments) == before  # dry

    out = master.cli("t", "continue", str(trial["id"]), "--config", str(edit)).stdout
    config = master.describe(_created(out))["experiment"]["config"]
    assert config["searcher"]["max_length"] == 3 and config["name"] == "to-continue"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("999",), "trialkit: error: trial 999 not found"),
        (("{trial}", "--set", "searcher.max_length=-1"), "searcher.max_length"),
    ],
)
def test_refusals_are_one_line(
    master: Master, tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    _, trial = source_trial(master, tmp_path)
    proc = master.cli("t", "continue", *(a.format(trial=trial["id"]) for a in args), check=False)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("trialkit: error: ") and says in line
    assert len(master.client.list_experiments(archived=True).experiments) == 1


def test_a_trial_without_a_checkpoint_cannot_be_continued(master: Master, tmp_path: Path) -> None:
    model = tmp_path / "model"
    write_script(model, "noop.py", "print('no checkpoint')\n")
    exp = master.create({**CONFIG, "entrypoint": "python3 noop.py", "name": "bare"}, model)
    trial = master.wait_state(exp, {"COMPLETED", "ERROR"})["trials"][0]
    proc = master.cli("t", "continue", str(trial["id"]), check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"trialkit: error: trial {trial['id']} has no checkpoint to continue from"
    ]
