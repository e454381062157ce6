"""Checkpoint contents are untrusted (issue 12 item 11): a symlink that dangles or leads
outside a checkpoint is refused at save with an error naming it; a download copies regular
files only, never follows a link out nor writes through one; checkpoint ids and resource paths
that would escape their directory are refused."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.inprocess_master import InProcessMaster, inprocess_master
from tests.local_runs import ingested_store
from trialkit import core
from trialkit.storage import (
    CheckpointContentError,
    CheckpointNotFound,
    SharedFSStorageManager,
    list_directory,
)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "passwd"
    path.parent.mkdir()
    path.write_text("root:x:0:0\n")
    return path


def test_list_directory_refuses_dangling_and_escaping_links(tmp_path: Path, secret: Path) -> None:
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "model.pt").write_bytes(b"w")
    (ckpt / "alias.pt").symlink_to("model.pt")
    assert list_directory(ckpt) == {"alias.pt": 1, "model.pt": 1}  # a link inside is fine
    (ckpt / "gone").symlink_to(ckpt / "missing")
    with pytest.raises(CheckpointContentError, match=r"gone: a symlink to .*missing"):
        list_directory(ckpt)
    (ckpt / "gone").unlink()
    (ckpt / "sub").mkdir()
    (ckpt / "sub" / "passwd").symlink_to(secret)
    with pytest.raises(CheckpointContentError, match=r"sub/passwd: a symlink to .*outside"):
        list_directory(ckpt)
    (ckpt / "sub" / "passwd").unlink()
    os.mkfifo(ckpt / "pipe")
    with pytest.raises(CheckpointContentError, match="pipe: not a regular file"):
        list_directory(ckpt)


def only_trial_checkpoints(home: Path) -> list[object]:
    store = ingested_store(home)
    try:
        return list(store.list_checkpoints())
    finally:
        store.close()


def test_save_with_a_dangling_link_is_refused_and_registers_nothing(
    trialkit_home: Path, tmp_path: Path, secret: Path
) -> None:
    base = tmp_path / "storage"
    src = tmp_path / "to_upload"
    src.mkdir()
    (src / "model.pt").write_bytes(b"w")
    (src / "dangling").symlink_to(src / "nope")
    with core.init(checkpoint_storage=str(base)) as ctx:
        with pytest.raises(CheckpointContentError, match="dangling"):
            ctx.checkpoint.upload(src, {"steps_completed": 1})
        with pytest.raises(CheckpointContentError, match="leak"):
            with ctx.checkpoint.store_path({"steps_completed": 2}) as (path, _):
                (path / "model.pt").write_bytes(b"w")
                (path / "leak").symlink_to(secret)
    assert only_trial_checkpoints(trialkit_home) == []
    assert not base.exists() or list(base.iterdir()) == []  # nothing published, no .partial


def plant(base: Path, storage_id: str, secret: Path) -> Path:
    """A stored checkpoint as a hostile writer could leave it."""
    ckpt = base / storage_id
    (ckpt / "sub").mkdir(parents=True)
    (ckpt / "model.pt").write_bytes(b"weights")
    (ckpt / "sub" / "inner_link").symlink_to("../model.pt")
    (ckpt / "passwd").symlink_to(secret)
    (ckpt / "dangling").symlink_to(base / "nowhere")
    (ckpt / "outside_dir").symlink_to(secret.parent, target_is_directory=True)
    os.mkfifo(ckpt / "pipe")
    return ckpt


def test_download_copies_regular_files_only(tmp_path: Path, secret: Path) -> None:
    base = tmp_path / "storage"
    plant(base, "c1", secret)
    dst = tmp_path / "out"
    dst.mkdir()
    decoy = tmp_path / "decoy"
    decoy.write_text("keep")
    (dst / "model.pt").symlink_to(decoy)  # a link already in the output must not be written through
    SharedFSStorageManager(base).download("c1", dst)
    files = {p.relative_to(dst).as_posix() for p in dst.rglob("*")}
    assert files == {"model.pt", "sub", "sub/inner_link"}
    assert not any(p.is_symlink() for p in dst.rglob("*"))
    assert (dst / "model.pt").read_bytes() == b"weights"
    assert (dst / "sub" / "inner_link").read_bytes() == b"weights"
    assert decoy.read_text() == "keep"


@pytest.mark.parametrize("storage_id", ["../outside", "/etc", "..", ".hidden", "a/b"])
def test_checkpoint_ids_that_escape_are_refused(tmp_path: Path, storage_id: str) -> None:
    with pytest.raises(CheckpointNotFound, match="is not a checkpoint id"):
        SharedFSStorageManager(tmp_path).download(storage_id, tmp_path / "out")


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        m.create()
        yield m


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"uuid": "../../etc"}, "body.uuid"),
        ({"resources": {"../x": 1}}, "body.resources"),
        ({"resources": {"/etc/passwd": 1}}, "body.resources"),
        ({"storage": {"type": "shared_fs"}}, "body.storage"),
    ],
)
def test_checkpoint_report_with_escaping_paths_is_refused(
    api: InProcessMaster, tmp_path: Path, change: dict[str, object], field: str
) -> None:
    body = {
        "uuid": "c1",
        "steps_completed": 1,
        "resources": {"model.pt": 1},
        "storage": {"type": "shared_fs", "host_path": str(tmp_path)},
        **change,
    }
    resp = api.call("POST", "/api/v1/trials/1/checkpoints", body)
    assert resp.status_code == 422 and field in resp.text, resp.text
    assert api.store.list_checkpoints() == []
