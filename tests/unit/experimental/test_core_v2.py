"""``determined.experimental.core_v2`` (Determined 0.36+ unmanaged runs) on trialkit's local
mode: the run is an unmanaged experiment in ``$TRIALKIT_HOME`` that ``trialkit experiment
list/describe`` show with its metrics and checkpoints (issue 32, item 8)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests import paths
from tests.inprocess_master import TOKEN, inprocess_master, served
from tests.local_runs import ingested_store
from trialkit._alias import BOOT_DIR
from trialkit.cli import _common, _experiment, cli
from trialkit.client import MasterClient

SRC = paths.SRC

#: A Determined 0.36 script, unmodified: the singleton API, closed at exit.
SCRIPT = """
from determined.experimental import core_v2

core_v2.init(
    defaults=core_v2.DefaultConfig(
        name="unmanaged-mnist",
        hparams={"lr": 0.1},
        description="from core_v2",
        labels=["v2"],
        searcher={"name": "single", "metric": "val_loss", "smaller_is_better": True},
    ),
    unmanaged=core_v2.UnmanagedConfig(external_experiment_id="ext-1"),
)
for step in (1, 2):
    core_v2.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
core_v2.train.report_validation_metrics(steps_completed=2, metrics={"val_loss": 0.25})
with core_v2.checkpoint.store_path({"steps_completed": 2}) as (path, uuid):
    (path / "model.txt").write_text("weights")
print("uuid", uuid, "info", core_v2.info)
"""


@pytest.mark.integration
def test_a_core_v2_script_is_an_unmanaged_experiment_listed_and_described(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "TRIALKIT_HOME": str(home)}
    env["PYTHONPATH"] = f"{BOOT_DIR}{os.pathsep}{SRC}"
    env.pop("TRIALKIT_CLUSTER_INFO", None)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    uuid = proc.stdout.split()[1]
    assert proc.stdout.split()[3] == "None"  # core_v2.info: no cluster
    ingested_store(home).close()  # as a master starting in this home does first
    with inprocess_master(home) as m:
        [exp] = m.store.list_experiments()
        assert (exp.name, exp.unmanaged, exp.state.value) == ("unmanaged-mnist", True, "COMPLETED")
        assert exp.config["hyperparameters"] == {"lr": 0.1}
        assert exp.config["data"] == {"external_experiment_id": "ext-1"}
        with served(m.app) as url:
            client = MasterClient(url, TOKEN)
            for module in (_common, _experiment):
                monkeypatch.setattr(module, "get_client", lambda start=True: client)
            listed = CliRunner().invoke(cli, ["e", "list"])
            described = CliRunner().invoke(cli, ["e", "describe", "1", "--json"])
    assert listed.exit_code == 0 and "unmanaged-mnist" in listed.output, listed.output
    assert described.exit_code == 0, described.output
    assert f'"uuid": "{uuid}"' in described.output
    assert '"val_loss": 0.25' in described.output and '"lr": 0.1' in described.output


def test_init_context_and_close_under_the_trialkit_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trialkit.experimental import core_v2

    monkeypatch.setenv("TRIALKIT_HOME", str(tmp_path))
    monkeypatch.delenv("TRIALKIT_CLUSTER_INFO", raising=False)
    core_v2.init(config=core_v2.Config(name="merged", hparams={"a": 1}, workspace="w"))
    assert core_v2.train is not None and core_v2.checkpoint is not None
    with pytest.raises(RuntimeError, match="already called"):
        core_v2.init()
    core_v2.train.report_training_metrics(steps_completed=1, metrics={"loss": 0.5})
    core_v2.close()
    core_v2.close()  # a second close (and the one at exit) does nothing
    assert core_v2.train is None
    store = ingested_store(tmp_path)
    try:
        [exp] = store.list_experiments()
        assert exp.name == "merged" and exp.state.value == "COMPLETED"
        [trial] = store.list_trials(exp.id)
        assert trial.hparams == {"a": 1}
        assert [m.values for m in store.list_metrics(trial.id, "training")] == [{"loss": 0.5}]
    finally:
        store.close()
