"""The object-store manager against real servers (moto S3, GCS emulator, Azurite): round trip,
manifest integrity, half-written checkpoints, and the store reached through fsspec only."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from trialkit.storage import (
    MANIFEST_NAME,
    CheckpointIntegrityError,
    CheckpointNotFound,
    ObjectStoreManager,
    build,
)


def make_checkpoint(root: Path) -> dict[str, bytes]:
    files = {
        "model.pt": os.urandom(300_000),
        "metadata.json": b'{"steps_completed": 3}',
        "opt/state.bin": os.urandom(5000),
        "opt/deeper/x.txt": b"x",
        "empty.bin": b"",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "emptydir").mkdir()
    return files


def manager(config: dict[str, Any]) -> ObjectStoreManager:
    m = build(config)
    assert isinstance(m, ObjectStoreManager)
    return m


def test_round_trip(store_config: dict[str, Any], tmp_path: Path) -> None:
    m = manager(store_config)
    with m.store_path("ck1") as path:
        files = make_checkpoint(path)
    assert m.exists("ck1") and not m.exists("ck2")
    listed = m.list_files("ck1")
    assert listed["model.pt"] == 300_000 and listed["opt/deeper/"] == 0
    assert "emptydir/" in listed and MANIFEST_NAME not in listed
    out = tmp_path / "out"
    m.download("ck1", out)
    for rel, data in files.items():
        assert (out / rel).read_bytes() == data
    assert (out / "emptydir").is_dir() and not (out / MANIFEST_NAME).exists()
    with m.restore_path("ck1", selector=lambda p: p.startswith("opt/")) as restored:
        got = sorted(str(p.relative_to(restored)) for p in restored.rglob("*") if p.is_file())
        assert got == ["opt/deeper/x.txt", "opt/state.bin"]
    assert not restored.exists()  # the temporary copy is gone after the block

    with m.store_path("ck10") as path:  # a storage id that "ck1" is a prefix of
        (path / "keep.txt").write_text("keep")
    m.delete("ck1")
    assert not m.exists("ck1")
    assert m.list_files("ck10") == {"keep.txt": 4}
    assert m._find(m._key("ck1")) == {}
    with pytest.raises(CheckpointNotFound, match="ck1"):
        m.download("ck1", tmp_path / "again")
    m.delete("ck1")  # deleting what is gone is fine


def test_upload_merges_the_ranks_of_a_sharded_checkpoint(
    store_config: dict[str, Any], tmp_path: Path
) -> None:
    m = manager(store_config)
    for rank in range(2):
        src = tmp_path / f"r{rank}"
        src.mkdir()
        (src / f"shard{rank}.bin").write_bytes(bytes([rank]) * 10)
        m.upload(src, "sharded", [f"shard{rank}.bin"])
    assert m.list_files("sharded") == {"shard0.bin": 10, "shard1.bin": 10}


def test_a_corrupted_object_is_caught_on_download(
    store_config: dict[str, Any], tmp_path: Path
) -> None:
    m = manager(store_config)
    with m.store_path("ck") as path:
        make_checkpoint(path)
    key = m._key("ck", "model.pt")
    m.fs.pipe_file(key, os.urandom(300_000))  # same size, other bytes
    with pytest.raises(CheckpointIntegrityError, match=r"model\.pt: sha256 differs"):
        m.download("ck", tmp_path / "a")
    m.fs.pipe_file(key, b"short")
    with pytest.raises(
        CheckpointIntegrityError, match=r"model\.pt: 5 bytes, the manifest says 300000"
    ):
        m.download("ck", tmp_path / "b")
    # The files the selector leaves out are not read, so not checked either.
    m.download("ck", tmp_path / "c", selector=lambda p: p != "model.pt")


def test_a_half_written_checkpoint_is_absent_and_cleaned_up(
    store_config: dict[str, Any], tmp_path: Path
) -> None:
    """A writer that died before the manifest leaves objects that are no checkpoint: not
    listed, not downloadable; removed once older than the grace period, complete ones kept."""
    m = manager(store_config)
    with m.store_path("done") as path:
        make_checkpoint(path)
    m.fs.pipe_file(m._key("crashed", "model.pt"), b"half")
    assert not m.exists("crashed")
    with pytest.raises(CheckpointNotFound, match="no manifest"):
        m.download("crashed", tmp_path / "x")
    assert m.remove_stale_partials() == []  # younger than the grace period: maybe still writing
    time.sleep(1.5)
    m.stale_age = 1.0
    assert [p.name for p in m.remove_stale_partials()] == ["crashed"]
    assert m._find(m._key("crashed")) == {}
    assert m.exists("done")
    m.download("done", tmp_path / "done")


def test_check_access_writes_reads_and_deletes_a_probe(store_config: dict[str, Any]) -> None:
    m = manager(store_config)
    m.check_access()
    assert m._find(m.backend.root) == {}
