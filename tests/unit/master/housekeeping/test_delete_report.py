"""``checkpoint delete``, ``experiment gc`` and ``experiment delete`` say what they really removed
(issue 31, item 3): the bytes the files took in storage, and a record whose files were not in
the experiment's storage as such, never counted as deleted. The CLI runs against an in-process
master served on loopback, with real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.inprocess_master import SINGLE, TOKEN, InProcessMaster, inprocess_master, served
from trialkit.storage import SharedFSStorageManager
from trialkit.store import ExperimentState, TrialState


@dataclass
class Setup:
    api: InProcessMaster
    home: Path
    tmp: Path

    def cli(self, *args: str) -> str:
        env = {**os.environ, "TRIALKIT_HOME": str(self.home)}
        cmd = [sys.executable, "-m", "trialkit.cli", *args]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stderr == "", out
        return out.stdout

    def experiment(self, storage: Path) -> tuple[int, int]:
        """A finished experiment keeping checkpoints in ``storage``, and its ended trial."""
        config = {**SINGLE, "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage)}}
        exp = self.api.create(config)
        [trial] = self.api.store.list_trials(exp)
        self.api.store.update_trial(trial.id, state=TrialState.COMPLETED)
        self.api.store.update_experiment(exp, state=ExperimentState.COMPLETED)
        return exp, trial.id

    def checkpoint(
        self, exp: int, trial: int, uuid: str, steps: int, storage: Path, files: bool
    ) -> None:
        """A checkpoint record (its 1000 bytes of files in ``storage`` when ``files``)."""
        if files:
            with SharedFSStorageManager(storage).store_path(uuid) as path:
                (path / "weights.bin").write_bytes(b"w" * 1000)
        self.api.store.add_checkpoint(
            uuid=uuid,
            trial_id=trial,
            experiment_id=exp,
            run_id=1,
            steps_completed=steps,
            metadata={},
            resources={"weights.bin": 1000},
            storage={"type": "shared_fs", "host_path": str(storage)},
        )


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    with inprocess_master(tmp_path / "master") as api, served(api.app) as url:
        home = tmp_path / "cli-home"
        home.mkdir(mode=0o700)
        (home / "master.json").write_text(json.dumps({"url": url, "token": TOKEN}))
        yield Setup(api, home, tmp_path)


NO_FILES = (
    "checkpoint {}: no files in the experiment's checkpoint storage; its record is marked "
    "deleted, nothing freed"
)


def test_checkpoint_delete_counts_only_files_it_removed(setup: Setup) -> None:
    ck = setup.tmp / "ck"
    exp, trial = setup.experiment(ck)
    # What a probe registered with a trial's token before registration was checked: uuid
    # "etc" under host_path "/", a record saying 5 bytes. Nothing of it is in the storage.
    setup.api.store.add_checkpoint(
        uuid="etc",
        trial_id=trial,
        experiment_id=exp,
        run_id=1,
        steps_completed=1,
        metadata={},
        resources={"hostname": 5},
        storage={"type": "shared_fs", "host_path": "/"},
    )
    setup.checkpoint(exp, trial, "real", 2, ck, files=True)
    out = setup.cli("checkpoint", "delete", "etc", "real")
    assert out.splitlines() == [
        "deleted checkpoint real",
        NO_FILES.format("etc"),
        "1 checkpoint deleted, 1000 bytes freed; 1 without files in storage marked deleted",
    ]
    assert not (ck / "real").exists() and Path("/etc").is_dir()
    assert {c.uuid: c.state for c in setup.api.store.list_checkpoints()} == {
        "etc": "DELETED",
        "real": "DELETED",
    }


def test_experiment_gc_and_delete_count_only_files_they_removed(setup: Setup) -> None:
    ck = setup.tmp / "ck"
    exp, trial = setup.experiment(ck)
    setup.checkpoint(exp, trial, "g1", 1, ck, files=False)  # its files were removed by hand
    setup.checkpoint(exp, trial, "g2", 2, ck, files=True)
    setup.checkpoint(exp, trial, "g3", 3, ck, files=True)
    out = setup.cli("experiment", "gc", str(exp))  # no validations: all but the latest go
    assert out.splitlines() == [
        "deleted checkpoint g2",
        NO_FILES.format("g1"),
        f"experiment {exp}: 1 checkpoint deleted, 1000 bytes freed; "
        "1 without files in storage marked deleted",
    ]
    setup.checkpoint(exp, trial, "g4", 4, ck, files=False)
    out = setup.cli("experiment", "delete", str(exp), "--yes")
    assert out.splitlines() == [
        f"deleted experiment {exp}: 1 checkpoint, 1000 bytes freed; "
        "1 checkpoint record had no files in storage"
    ]
    assert list(ck.iterdir()) == []
