"""Checkpoint reports are taken only from the trial's current run while it has not ended (issue
12 leftovers, as for metrics): a replaced run's checkpoint is refused with 409, and the trial
side turns that answer into one line and deletes the files nothing will ever register."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.inprocess_master import SINGLE, TOKEN, InProcessMaster, inprocess_master, served
from trialkit.client import MasterClient
from trialkit.core import CheckpointContext, DummyDistributedContext
from trialkit.core._http import HttpBackend
from trialkit.errors import APIError
from trialkit.storage import SharedFSStorageManager
from trialkit.store import TrialState


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        # experiment 1 with trial 1 (run 0: never launched here), checkpoints in tmp_path/ck
        m.create(
            {
                **SINGLE,
                "checkpoint_storage": {"type": "shared_fs", "host_path": str(tmp_path / "ck")},
            }
        )
        yield m


def body(tmp_path: Path, run_id: int, uuid: str = "c1") -> dict[str, Any]:
    return {
        "uuid": uuid,
        "run_id": run_id,
        "steps_completed": 1,
        "resources": {},
        "storage": {"type": "shared_fs", "host_path": str(tmp_path / "ck")},
    }


@pytest.mark.parametrize("why", ["replaced run", "ended trial"])
def test_checkpoints_of_a_replaced_run_or_ended_trial_get_409(
    api: InProcessMaster, tmp_path: Path, why: str
) -> None:
    if why == "replaced run":
        api.store.update_trial(1, run_id=2)
        expected = "run 1 of trial 1 is not its current run (2)"
    else:
        api.store.update_trial(1, run_id=1, state=TrialState.COMPLETED)
        expected = "trial 1 is COMPLETED; it takes no more reports"
    resp = api.call("POST", "/api/v1/trials/1/checkpoints", body(tmp_path, run_id=1))
    assert resp.status_code == 409 and expected in resp.json()["detail"]
    assert api.store.list_checkpoints() == []


def test_current_run_of_an_active_trial_registers_its_checkpoint(
    api: InProcessMaster, tmp_path: Path
) -> None:
    """A trial's final checkpoint arrives while it is still ACTIVE: it is taken."""
    api.store.update_trial(1, run_id=3, state=TrialState.ACTIVE)
    resp = api.call("POST", "/api/v1/trials/1/checkpoints", body(tmp_path, run_id=3))
    assert resp.status_code == 200, resp.text
    assert [c.uuid for c in api.store.list_checkpoints()] == ["c1"]


def _refused_save(api: InProcessMaster, where: Path) -> tuple[APIError, str]:
    """Save a checkpoint in ``where`` as run 2 of trial 1 through the Core API; the master's
    refusal as the trial raises it, and the checkpoint's uuid."""
    storage = {"type": "shared_fs", "host_path": str(where)}
    with served(api.app) as url:
        backend = HttpBackend(MasterClient(url, TOKEN), 1, 1, 2)
        ctx = CheckpointContext(
            DummyDistributedContext(), SharedFSStorageManager(where), storage, backend
        )
        with pytest.raises(APIError) as info:
            with ctx.store_path({"steps_completed": 5}) as (path, uuid):
                (path / "state.bin").write_bytes(b"x" * 100)
        backend.close()
    return info.value, uuid


def test_trial_side_refusal_is_one_line_and_leaves_no_files(
    api: InProcessMaster, tmp_path: Path
) -> None:
    api.store.update_trial(1, run_id=3)  # this process is run 2: a replaced run
    error, uuid = _refused_save(api, tmp_path / "ck")
    message = str(error)
    assert error.status == 409 and "\n" not in message
    assert f"checkpoint {uuid} was not registered" in message
    assert "not its current run" in message and "its files were deleted" in message
    assert not (tmp_path / "ck" / uuid).exists()
    assert api.store.list_checkpoints() == []


ELSEWHERE = {
    "host_path /": ({"type": "shared_fs", "host_path": "/"}, "host_path '/' is not"),
    "storage_path": (
        {"type": "shared_fs", "host_path": "HOME", "storage_path": "sub"},
        "host_path 'HOME/sub' is not 'HOME'",
    ),
    "another type": ({"type": "directory", "container_path": "HOME"}, "type 'directory' is not"),
}


@pytest.mark.parametrize("where", ELSEWHERE)
def test_a_checkpoint_outside_the_experiments_storage_is_refused(
    api: InProcessMaster, tmp_path: Path, where: str
) -> None:
    """As a probe did with a trial's token: uuid "etc" under host_path "/" named /etc."""
    api.store.update_trial(1, run_id=3, state=TrialState.ACTIVE)
    storage, expected = ELSEWHERE[where]
    home = str(tmp_path / "ck")
    storage = {k: v.replace("HOME", home) for k, v in storage.items()}
    resp = api.call(
        "POST",
        "/api/v1/trials/1/checkpoints",
        {**body(tmp_path, run_id=3, uuid="etc"), "storage": storage},
    )
    assert resp.status_code == 403, resp.text
    detail = resp.json()["detail"]
    assert detail.startswith(f"storage: {expected.replace('HOME', home)}"), detail
    assert "a trial registers checkpoints only in its experiment's checkpoint storage" in detail
    assert api.store.list_checkpoints() == []


@pytest.mark.parametrize("uuid", ["../etc", "a/b", "..", "x..y"])
def test_a_uuid_that_leaves_the_storage_directory_is_refused(
    api: InProcessMaster, tmp_path: Path, uuid: str
) -> None:
    api.store.update_trial(1, run_id=3, state=TrialState.ACTIVE)
    resp = api.call("POST", "/api/v1/trials/1/checkpoints", body(tmp_path, run_id=3, uuid=uuid))
    assert resp.status_code == 422, resp.text
    assert "without '/' or '..'" in resp.text
    assert api.store.list_checkpoints() == []


def test_a_trial_saving_outside_its_storage_gets_one_line_and_no_files_left(
    api: InProcessMaster, tmp_path: Path
) -> None:
    """core.init(checkpoint_storage=...) under a master, naming other storage than the config."""
    api.store.update_trial(1, run_id=2, state=TrialState.ACTIVE)
    other = tmp_path / "other"
    error, uuid = _refused_save(api, other)
    message = str(error)
    assert error.status == 403 and "\n" not in message
    assert f"checkpoint {uuid} was not registered: storage: host_path" in message
    assert message.endswith("its files were deleted")
    assert not (other / uuid).exists() and api.store.list_checkpoints() == []
