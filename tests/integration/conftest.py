"""Fixtures that start a real master (a separate process) in a fresh TRIALKIT_HOME."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from trialkit.client import MasterClient, start_background, stop_master

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
TRIALKIT = [sys.executable, "-m", "trialkit.cli"]


@dataclass
class Master:
    home: Path
    client: MasterClient
    env: dict[str, str]

    def cli(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run the trialkit CLI as a user would."""
        proc = subprocess.run(
            [*TRIALKIT, *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"trialkit {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def describe(self, experiment_id: int) -> dict[str, Any]:
        return self.client.request("GET", f"/api/v1/experiments/{experiment_id}", retry_for=30)  # type: ignore[no-any-return]

    def wait_for(
        self, predicate: Callable[[], bool], timeout: float = 60, what: str = "condition"
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}")

    def wait_state(
        self, experiment_id: int, states: set[str], timeout: float = 90
    ) -> dict[str, Any]:
        self.wait_for(
            lambda: self.describe(experiment_id)["experiment"]["state"] in states,
            timeout,
            f"experiment {experiment_id} in {states}",
        )
        return self.describe(experiment_id)

    def create(self, config: dict[str, Any], model_dir: Path) -> int:
        cfg = model_dir / "_config.json"
        cfg.write_text(json.dumps(config))
        out = self.cli("experiment", "create", str(cfg), str(model_dir)).stdout
        return int(out.strip().split()[-1])

    def pid(self) -> int:
        return int(json.loads((self.home / "master.json").read_text())["pid"])


def _kill_leftover_trials(home: Path) -> None:
    """Any trial process group still alive after a test is killed (nothing may leak)."""
    from trialkit.store import Store

    if "TRIALKIT_DB" not in os.environ and not (home / "trialkit.db").exists():
        return
    store = Store.for_home(home)
    for t in store.list_trials():
        if t.pid:
            try:
                os.killpg(t.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    store.close()


def _run_master(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Master]:
    monkeypatch.setenv("TRIALKIT_HOME", str(home))
    monkeypatch.delenv("TRIALKIT_CLUSTER_INFO", raising=False)
    env = {**os.environ, "TRIALKIT_HOME": str(home)}
    client = start_background(home, slots=2)
    try:
        yield Master(home, client, env)
    finally:
        client.close()
        stop_master(home)
        _kill_leftover_trials(home)


@pytest.fixture
def master(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Master]:
    monkeypatch.delenv("TRIALKIT_DB", raising=False)
    yield from _run_master(tmp_path / "home", monkeypatch)


@pytest.fixture
def pg_master(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres: Any) -> Iterator[Master]:
    """A master whose store is a fresh database on a real PostgreSQL server ($TRIALKIT_DB)."""
    monkeypatch.setenv("TRIALKIT_DB", postgres.new_database())
    yield from _run_master(tmp_path / "home", monkeypatch)


def only_local_run_training(home: Path) -> list[Any]:
    """Training metrics of the one local-mode run in ``home``, checked to be a single COMPLETED
    experiment with a single trial (launched workers join the chief's run, not their own)."""
    from tests.local_runs import ingested_store

    store = ingested_store(home)
    try:
        [exp] = store.list_experiments()
        assert exp.state.value == "COMPLETED"
        [trial] = store.list_trials(exp.id)
        return store.list_metrics(trial.id, "training")
    finally:
        store.close()


def write_script(model_dir: Path, name: str, body: str) -> Path:
    model_dir.mkdir(parents=True, exist_ok=True)
    path = model_dir / name
    path.write_text(body)
    return path


def checkpoint_entries(root: Path) -> list[Path]:
    """What a shared_fs checkpoint storage holds but ``tensorboard/``, where TensorboardMode.AUTO
    uploads the trials' event files beside the checkpoints (GC leaves them)."""
    return [p for p in root.iterdir() if p.name != "tensorboard"]


def keep_all_checkpoints(host_path: Path) -> dict[str, Any]:
    """A checkpoint_storage block whose GC policy keeps every checkpoint: GC runs when an
    experiment ends, so a test that looks at every checkpoint afterwards needs it."""
    return {
        "type": "shared_fs",
        "host_path": str(host_path),
        "save_experiment_best": 0,
        "save_trial_best": 1000,
        "save_trial_latest": 1000,
    }
