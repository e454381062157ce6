"""The master and local mode on a real PostgreSQL server ($TRIALKIT_DB): a search runs to
COMPLETED, a master killed with SIGKILL is picked up again, and a local-mode run is listed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from trialkit.client import start_background
from trialkit.store import Store

from .conftest import EXAMPLES, Master
from .test_lifecycle import TRIAL, _config, _training_steps

pytestmark = pytest.mark.integration
CORE = EXAMPLES / "core_api"


def test_search_runs_to_completed_on_postgres(pg_master: Master) -> None:
    proc = pg_master.cli(
        "experiment", "create", str(CORE / "3_hpsearch.yaml"), str(CORE), "--follow"
    )
    assert "ended COMPLETED" in proc.stdout
    desc = json.loads(pg_master.cli("experiment", "describe", "1", "--json").stdout)
    assert [t["state"] for t in desc["trials"]] == ["COMPLETED"] * 4
    assert all(t["latest_validation"]["steps_completed"] == 100 for t in desc["trials"])
    assert len(desc["checkpoints"]) == 40
    assert not (pg_master.home / "trialkit.db").exists()  # nothing went to SQLite
    store = Store(os.environ["TRIALKIT_DB"])
    try:
        assert store.get_experiment(1).state.value == "COMPLETED"
    finally:
        store.close()


def test_master_killed_on_postgres_is_picked_up(pg_master: Master, tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "trial.py").write_text(TRIAL)
    exp = pg_master.create(_config(TOTAL=60, STEP_SECONDS=0.05), model_dir)
    pg_master.wait_for(lambda: len(_training_steps(pg_master, 1)) >= 5, what="first metrics")
    os.kill(pg_master.pid(), signal.SIGKILL)
    pg_master.client = start_background(pg_master.home, slots=2)
    desc = pg_master.wait_state(exp, {"COMPLETED", "ERROR"})
    assert desc["experiment"]["state"] == "COMPLETED"
    assert desc["trials"][0]["restarts"] == 0
    assert sorted(_training_steps(pg_master, 1)) == list(range(1, 61))


def test_local_mode_writes_to_postgres(pg_master: Master, tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(CORE / "1_metrics.py")],
        env=pg_master.env,
        check=True,
        timeout=60,
        cwd=tmp_path,
    )
    listed = json.loads(pg_master.cli("experiment", "list", "--json").stdout)
    assert any(e["name"] == "local: 1_metrics.py" for e in listed)
