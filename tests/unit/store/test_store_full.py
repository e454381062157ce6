"""A store write that finds the disk full (issue 31 item 1): the client gets one line naming the
cause and what to do, with a 507, never "internal error"; a create leaves nothing half-made,
and a retry once space is freed creates exactly one experiment.

The disk is real: TRIALKIT_HOME is a small tmpfs that a filler file fills up, so SQLite itself
meets ENOSPC (its SQLITE_FULL, "database or disk is full")."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.inprocess_master import TOKEN, InProcessMaster, inprocess_master, served

FULL = "the disk holding TRIALKIT_HOME is full: free space and retry"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted afterwards (skipped where mounting is not permitted)."""
    if shutil.which("mount") is None:
        pytest.skip("no mount command to make a small tmpfs with")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def api(disk: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(disk / "home") as m:
        yield m


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte with one file; returns it (delete it to free the space)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (2**16, 2**12, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e
                    break
    finally:
        os.close(fd)
    return filler


def experiment_ids(api: InProcessMaster) -> list[int]:
    return [e.id for e in api.store.list_experiments(include_archived=True)]


def assert_disk_full_reply(resp: Any) -> None:
    assert resp.status_code == 507, resp.text
    assert resp.json() == {"detail": FULL}


def test_create_on_a_full_disk_is_one_line_and_leaves_no_experiment(
    api: InProcessMaster, disk: Path
) -> None:
    filler = fill(disk)
    assert_disk_full_reply(api.call("POST", "/api/v1/experiments", _create_body()))
    assert experiment_ids(api) == []
    filler.unlink()
    exp = api.create()
    assert experiment_ids(api) == [exp]


def test_create_whose_trials_find_the_disk_full_is_deleted_and_a_retry_makes_one(
    api: InProcessMaster, disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The experiment's row is written, then the disk fills before its first trial is: the
    experiment must not stay ACTIVE with no trials (what a probe saw on main)."""
    filled: list[Path] = []
    create_trial = api.store.create_trial

    def disk_fills_first(**kwargs: Any) -> Any:
        if not filled:
            filled.append(fill(disk))
        return create_trial(**kwargs)

    monkeypatch.setattr(api.store, "create_trial", disk_fills_first)
    assert_disk_full_reply(api.call("POST", "/api/v1/experiments", _create_body()))
    assert filled, "the disk did not fill where the test meant it to"
    filled[0].unlink()
    exp = api.create()
    assert experiment_ids(api) == [exp]  # the failed one is gone, not left ACTIVE
    assert len(api.store.list_trials(exp)) == 1


def test_any_route_writing_to_a_full_disk_answers_the_same_line(
    api: InProcessMaster, disk: Path
) -> None:
    exp = api.create()
    [trial] = api.store.list_trials(exp)
    fill(disk)
    resp = api.call("POST", f"/api/v1/trials/{trial.id}/status", {"status": "x" * 4096})
    assert_disk_full_reply(resp)
    body = {"run_id": 0, "sender": "s", "seq": 1, "reports": [_report()]}
    assert_disk_full_reply(api.call("POST", f"/api/v1/trials/{trial.id}/metrics", body))


def test_the_cli_prints_the_line(api: InProcessMaster, disk: Path, tmp_path: Path) -> None:
    """``trialkit e create`` on a full disk: the master's line, not 'internal error'."""
    cli_home = tmp_path / "cli-home"
    cli_home.mkdir()
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "train.py").write_text("print('never run')\n")
    config = tmp_path / "exp.yaml"
    config.write_text(json.dumps(_create_body()["config"]))
    with served(api.app) as url:
        (cli_home / "master.json").write_text(json.dumps({"url": url, "token": TOKEN}))
        fill(disk)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "trialkit.cli",
                "e",
                "create",
                str(config),
                str(tmp_path / "model"),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "TRIALKIT_HOME": str(cli_home)},
            timeout=120,
        )
    assert done.returncode != 0
    assert done.stderr.strip() == f"trialkit: error: {FULL}", done.stderr
    assert experiment_ids(api) == []


def _report() -> dict[str, Any]:
    return {"group": "training", "steps_completed": 1, "metrics": {"loss": 0.5}}


def _create_body() -> dict[str, Any]:
    from tests.inprocess_master import MODEL_DEF, SINGLE

    return {"config": SINGLE, "model_def": MODEL_DEF}


def test_another_store_failure_is_a_503_line_not_internal_error(api: InProcessMaster) -> None:
    """A store that fails for another reason (locked, unreachable) is not a bug: 503 and the
    store's one-line reason, no 'internal error'."""
    from trialkit.store import StoreError

    @api.app.get("/locked")
    def locked() -> None:
        raise StoreError("store error: OperationalError: database is locked")

    resp = api.call("GET", "/locked")
    assert resp.status_code == 503
    assert resp.json() == {
        "detail": "the store failed (store error: OperationalError: database is locked); "
        "retry, and see the master log"
    }
