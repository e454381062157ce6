"""The object-store manager against real servers (moto S3, GCS emulator, Azurite): round trip,
manifest integrity, half-written checkpoints, and the store reached through fsspec only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from trialkit.storage import (
    MANIFEST_NAME,
    PARTIALS,
    CheckpointIntegrityError,
    CheckpointNotFound,
    ObjectStoreManager,
    build,
    list_directory,
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


CRASHING_UPLOAD = """
import json, os, sys
from pathlib import Path
from trialkit.storage import build
m = build(json.loads(sys.argv[1]))
real = m._put
def put_then_die(src, rel, storage_id):
    out = real(src, rel, storage_id)
    if rel == "model.pt":
        os._exit(9)
    return out
m._put = put_then_die
m.workers = 1
m.upload(Path(sys.argv[2]), "crashed", ["metadata.json", "model.pt", "opt/state.bin"])
"""


def crash_mid_upload(config: dict[str, Any], tmp_path: Path) -> None:
    """An upload killed after its second file, in a process of its own."""
    src = tmp_path / "crashing"
    src.mkdir()
    make_checkpoint(src)
    proc = subprocess.run(
        [sys.executable, "-c", CRASHING_UPLOAD, json.dumps(config), str(src)], timeout=120
    )
    assert proc.returncode == 9


def test_a_half_written_checkpoint_is_absent_and_cleaned_up(
    store_config: dict[str, Any], tmp_path: Path
) -> None:
    """A writer that died before the manifest leaves objects that are no checkpoint: not
    listed, not downloadable; removed once older than the grace period, complete ones kept."""
    m = manager(store_config)
    with m.store_path("done") as path:
        make_checkpoint(path)
    crash_mid_upload(store_config, tmp_path)
    assert len(m._find(m._key("crashed"))) == 2
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
    assert m._find(f"{m.backend.root}/{PARTIALS}") == {}  # no marker left behind


def test_the_stale_partial_sweep_lists_only_the_partial_markers(
    store_config: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With many checkpoints (and TensorBoard files) in the store, the sweep that runs at every
    launch lists the marker prefix, plus the prefix of each stale partial: never the whole
    store (before, it listed every object of every checkpoint)."""
    m = manager(store_config)
    src = tmp_path / "src"
    src.mkdir()
    make_checkpoint(src)
    paths = sorted(list_directory(src))
    for i in range(6):
        m.upload(src, f"ck{i}", paths)
    m.upload_files([(src / "model.pt", "events.out.tfevents.1")], "tensorboard/experiment-1")
    crash_mid_upload(store_config, tmp_path)
    time.sleep(1.5)
    m.stale_age = 1.0

    listed: list[str] = []
    real_find = m.fs.find

    def recording_find(path: str, *args: Any, **kwargs: Any) -> Any:
        found = real_find(path, *args, **kwargs)
        listed.append(path)
        listed.extend(found)
        return found

    with monkeypatch.context() as patched:  # (monkeypatch.undo would drop the servers' env)
        patched.setattr(m.fs, "find", recording_find)
        assert [p.name for p in m.remove_stale_partials()] == ["crashed"]
    root = m.backend.root
    allowed = (f"{root}/{PARTIALS}", f"{root}/crashed")
    assert listed and all(k.startswith(allowed) for k in listed), listed
    assert len(listed) == 5  # the two prefixes, the marker and crashed's two objects
    assert all(m.exists(f"ck{i}") for i in range(6))
    assert m._find(f"{root}/tensorboard")  # TensorBoard files are no partial checkpoint


def test_check_access_writes_reads_and_deletes_a_probe(store_config: dict[str, Any]) -> None:
    m = manager(store_config)
    m.check_access()
    assert m._find(m.backend.root) == {}
