"""A checkpoint saved while the master is unreachable is journaled in the trial's directory, and
the master registers the journal later: once, and only with its files complete in storage."""

from __future__ import annotations

import json
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from trialkit.client import MasterClient
from trialkit.contract import RETRY_ENV
from trialkit.contract._cluster_info import INFO_ENV
from trialkit.core import CheckpointContext, DummyDistributedContext
from trialkit.core._http import HttpBackend
from trialkit.errors import MasterUnavailable
from trialkit.master.housekeeping._journal import register_journaled_checkpoints
from trialkit.storage import SharedFSStorageManager
from trialkit.store import Store, Trial


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again on exit: nothing listens there


@pytest.fixture
def trial_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "home" / "trials" / "1"
    d.mkdir(parents=True)
    monkeypatch.setenv(INFO_ENV, str(d / "cluster_info.json"))
    return d


@pytest.fixture
def unreachable(monkeypatch: pytest.MonkeyPatch) -> Iterator[HttpBackend]:
    monkeypatch.delenv(RETRY_ENV, raising=False)
    monkeypatch.setattr(HttpBackend, "RETRY_FOR", 0.3)
    client = MasterClient(f"http://127.0.0.1:{_closed_port()}", "token", timeout=2)
    backend = HttpBackend(client, trial_id=1, experiment_id=1, run_id=2)
    yield backend
    backend.close()


def _ckpt_ctx(tmp_path: Path, backend: HttpBackend) -> CheckpointContext:
    cfg = {"type": "shared_fs", "host_path": str(tmp_path / "ck")}
    return CheckpointContext(
        DummyDistributedContext(), SharedFSStorageManager(tmp_path / "ck"), cfg, backend
    )


def _save(ctx: CheckpointContext) -> str:
    with pytest.raises(MasterUnavailable) as info:
        with ctx.store_path({"steps_completed": 5}) as (path, _):
            (path / "state.bin").write_bytes(b"x" * 100)
    message = str(info.value)
    assert "\n" not in message
    assert "is saved" in message and "will be registered when the master is back" in message
    return message


def test_unreachable_master_journals_the_checkpoint(
    tmp_path: Path, trial_dir: Path, unreachable: HttpBackend
) -> None:
    message = _save(_ckpt_ctx(tmp_path, unreachable))
    [entry_file] = list((trial_dir / "unregistered-checkpoints").iterdir())
    assert stat.S_IMODE(entry_file.stat().st_mode) == 0o600
    entry = json.loads(entry_file.read_text())
    assert entry_file.name == f"{entry['uuid']}.json" and entry["uuid"] in message
    assert (entry["trial_id"], entry["run_id"], entry["steps_completed"]) == (1, 2, 5)
    assert entry["resources"] == {"metadata.json": entry["resources"]["metadata.json"],
                                  "state.bin": 100}  # fmt: skip
    assert entry["storage"] == {"type": "shared_fs", "host_path": str(tmp_path / "ck")}
    assert (tmp_path / "ck" / entry["uuid"] / "state.bin").stat().st_size == 100


def test_retry_window_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    client = MasterClient("http://127.0.0.1:1", "token")
    monkeypatch.setenv(RETRY_ENV, "2")
    assert HttpBackend(client, 1, 1, 1).retry_for == 2.0
    monkeypatch.delenv(RETRY_ENV)
    assert HttpBackend(client, 1, 1, 1).retry_for == HttpBackend.RETRY_FOR == 300.0
    for bad in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv(RETRY_ENV, bad)
        with pytest.raises(ValueError, match=RETRY_ENV):
            HttpBackend(client, 1, 1, 1)
    client.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.at(tmp_path / "home")
    yield s
    s.close()


def _trial(store: Store, storage: Path) -> Trial:
    config = {
        "searcher": {"name": "single"},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage)},
    }
    exp = store.create_experiment(name="e", config=config)
    return store.create_trial(experiment_id=exp.id, request_id="r1", hparams={}, seed=1)


def test_master_registers_the_journal_once(
    tmp_path: Path, trial_dir: Path, unreachable: HttpBackend, store: Store
) -> None:
    trial = _trial(store, tmp_path / "ck")
    assert trial.id == 1
    _save(_ckpt_ctx(tmp_path, unreachable))
    [entry_file] = list((trial_dir / "unregistered-checkpoints").iterdir())
    uuid, saved = entry_file.stem, entry_file.read_text()
    assert register_journaled_checkpoints(store, trial, trial_dir) == [uuid]
    assert not entry_file.exists()
    ckpt = store.latest_checkpoint(trial.id)
    assert ckpt is not None and ckpt.uuid == uuid and ckpt.steps_completed == 5
    assert ckpt.run_id == 2 and ckpt.resources["state.bin"] == 100
    # The same entry again (the master died before deleting it): not registered twice.
    entry_file.write_text(saved)
    assert register_journaled_checkpoints(store, trial, trial_dir) == []
    assert [c.uuid for c in store.list_checkpoints(trial_id=trial.id)] == [uuid]
    assert not entry_file.exists()


def test_master_drops_a_journal_entry_whose_files_are_missing(
    tmp_path: Path, trial_dir: Path, unreachable: HttpBackend, store: Store
) -> None:
    trial = _trial(store, tmp_path / "ck")
    _save(_ckpt_ctx(tmp_path, unreachable))
    _save(_ckpt_ctx(tmp_path, unreachable))
    gone, truncated = sorted((trial_dir / "unregistered-checkpoints").iterdir())
    (tmp_path / "ck" / gone.stem / "state.bin").unlink()
    (tmp_path / "ck" / truncated.stem / "state.bin").write_bytes(b"x" * 10)
    assert register_journaled_checkpoints(store, trial, trial_dir) == []
    assert store.list_checkpoints(trial_id=trial.id) == []
    assert not list((trial_dir / "unregistered-checkpoints").iterdir())


def test_without_a_trial_directory_the_error_is_unchanged(
    tmp_path: Path, unreachable: HttpBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No cluster info file (e.g. Determined's /run/determined/info layout): nowhere to journal."""
    monkeypatch.delenv(INFO_ENV, raising=False)
    with pytest.raises(MasterUnavailable, match="cannot reach the master"):
        with _ckpt_ctx(tmp_path, unreachable).store_path({"steps_completed": 5}):
            pass
    assert not list(tmp_path.rglob("unregistered-checkpoints"))


def test_master_drops_a_journal_entry_outside_the_experiments_storage(
    tmp_path: Path, trial_dir: Path, unreachable: HttpBackend, store: Store
) -> None:
    # The experiment keeps checkpoints in "elsewhere"; the entry names the trial's "ck".
    trial = _trial(store, tmp_path / "elsewhere")
    _save(_ckpt_ctx(tmp_path, unreachable))
    assert register_journaled_checkpoints(store, trial, trial_dir) == []
    assert store.list_checkpoints(trial_id=trial.id) == []
    assert not list((trial_dir / "unregistered-checkpoints").iterdir())


def test_the_message_names_the_checkpoint_first(
    tmp_path: Path, trial_dir: Path, unreachable: HttpBackend
) -> None:
    message = _save(_ckpt_ctx(tmp_path, unreachable))
    [entry_file] = list((trial_dir / "unregistered-checkpoints").iterdir())
    assert message.startswith(f"checkpoint {entry_file.stem} is saved but the master could not")


def test_a_journal_that_cannot_be_written_is_said_so(
    tmp_path: Path, trial_dir: Path, unreachable: HttpBackend
) -> None:
    """The checkpoint's files are kept, and the one-line error says it is neither registered
    nor journaled (the journal's place is taken by a file here)."""
    (trial_dir / "unregistered-checkpoints").write_text("not a directory")
    with pytest.raises(MasterUnavailable) as info:
        with _ckpt_ctx(tmp_path, unreachable).store_path({"steps_completed": 5}) as (path, sid):
            (path / "state.bin").write_bytes(b"x")
    message = str(info.value)
    assert message.startswith(f"checkpoint {sid} is saved but could not be registered (")
    assert "nor journaled for later registration (" in message and "\n" not in message
    assert (tmp_path / "ck" / sid / "state.bin").exists()
