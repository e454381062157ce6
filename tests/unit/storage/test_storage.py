"""Checkpoint storage: atomic publish, upload/download with selectors, string shortcuts and
config errors (reference §1.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trialkit.config import DirectoryStorage, SharedFSStorage
from trialkit.storage import (
    CheckpointNotFound,
    SharedFSStorageManager,
    StorageConfigError,
    build,
    from_string,
    list_directory,
    shared_fs_path,
    storage_model,
)


def make_tree(root: Path) -> Path:
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "model.pt").write_bytes(b"weights")
    (root / "sub" / "opt.pt").write_bytes(b"optimizer!")
    (root / "sub" / "deeper" / "notes.txt").write_text("hi")
    (root / "empty").mkdir()
    return root


def test_list_directory_lists_files_with_sizes_and_dirs_with_slash(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ckpt")
    assert list_directory(root) == {
        "empty/": 0,
        "model.pt": 7,
        "sub/": 0,
        "sub/deeper/": 0,
        "sub/deeper/notes.txt": 2,
        "sub/opt.pt": 10,
    }


# store_path ------------------------------------------------------------------------------------


def test_store_path_is_invisible_until_the_block_exits(tmp_path: Path) -> None:
    sm = SharedFSStorageManager(tmp_path / "base")
    with sm.store_path("abc") as path:
        (path / "model.pt").write_bytes(b"w")
        assert not sm.exists("abc")
        assert not (tmp_path / "base" / "abc").exists()
        assert path.parent.name.startswith(".")  # hidden while partial
    assert sm.exists("abc")
    assert (tmp_path / "base" / "abc" / "model.pt").read_bytes() == b"w"
    assert sorted(p.name for p in (tmp_path / "base").iterdir()) == ["abc"]  # no partial left


def test_store_path_leaves_nothing_when_the_block_fails(tmp_path: Path) -> None:
    sm = SharedFSStorageManager(tmp_path / "base")
    with pytest.raises(KeyError):
        with sm.store_path("abc") as path:
            (path / "half.pt").write_bytes(b"w")
            raise KeyError("crash mid-save")
    assert not sm.exists("abc")
    assert list((tmp_path / "base").iterdir()) == []


def test_second_store_path_into_a_published_id_merges(tmp_path: Path) -> None:
    """Sharded saves: ranks publish into the same storage id one after another."""
    sm = SharedFSStorageManager(tmp_path)
    with sm.store_path("shared") as path:
        (path / "rank0.pt").write_text("0")
    with sm.store_path("shared") as path:
        (path / "rank1.pt").write_text("1")
    assert list_directory(tmp_path / "shared") == {"rank0.pt": 1, "rank1.pt": 1}


def test_base_path_is_expanded_and_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert SharedFSStorageManager("~/ckpts").base_path == tmp_path / "ckpts"
    monkeypatch.chdir(tmp_path)
    assert SharedFSStorageManager("rel").base_path == tmp_path / "rel"


# upload / download / restore / delete ----------------------------------------------------------


def test_upload_copies_only_the_listed_paths(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    sm = SharedFSStorageManager(tmp_path / "base")
    sm.upload(src, "id1", ["model.pt", "sub/deeper/notes.txt", "empty/"])
    assert list_directory(tmp_path / "base" / "id1") == {
        "empty/": 0,
        "model.pt": 7,
        "sub/": 0,
        "sub/deeper/": 0,
        "sub/deeper/notes.txt": 2,
    }
    assert sorted(p.name for p in (tmp_path / "base").iterdir()) == ["id1"]  # no partial left


def test_failed_upload_leaves_nothing_behind(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    base = tmp_path / "base"
    sm = SharedFSStorageManager(base)
    with pytest.raises(FileNotFoundError):
        sm.upload(src, "id1", ["model.pt", "missing.pt"])
    assert not sm.exists("id1")
    assert list(base.iterdir()) == [], "a half-copied partial directory was left in storage"


def test_download_with_selector_copies_accepted_files_only(tmp_path: Path) -> None:
    sm = SharedFSStorageManager(tmp_path / "base")
    src = make_tree(tmp_path / "src")
    sm.upload(src, "id1", list(list_directory(src)))
    dst = tmp_path / "out" / "nested"  # created if missing
    sm.download("id1", dst, selector=lambda rel: rel.endswith(".pt"))
    files = {k for k in list_directory(dst) if not k.endswith("/")}
    assert files == {"model.pt", "sub/opt.pt"}
    assert (dst / "sub" / "opt.pt").read_bytes() == b"optimizer!"


def test_download_without_selector_is_a_full_copy(tmp_path: Path) -> None:
    sm = SharedFSStorageManager(tmp_path / "base")
    src = make_tree(tmp_path / "src")
    sm.upload(src, "id1", list(list_directory(src)))
    sm.download("id1", tmp_path / "out")
    assert list_directory(tmp_path / "out") == list_directory(src)


def test_missing_checkpoint_raises_checkpoint_not_found(tmp_path: Path) -> None:
    sm = SharedFSStorageManager(tmp_path)
    with pytest.raises(CheckpointNotFound, match="nope"):
        sm.download("nope", tmp_path / "out")
    with pytest.raises(CheckpointNotFound, match="nope"):
        with sm.restore_path("nope"):
            pass
    assert issubclass(CheckpointNotFound, FileNotFoundError)


def test_restore_path_yields_the_stored_directory(tmp_path: Path) -> None:
    sm = SharedFSStorageManager(tmp_path)
    with sm.store_path("id") as path:
        (path / "w.pt").write_text("x")
    with sm.restore_path("id") as restored:
        assert (restored / "w.pt").read_text() == "x"
    assert (tmp_path / "id" / "w.pt").exists()  # zero-copy: nothing cleaned up


def test_restore_path_warns_that_a_selector_is_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sm = SharedFSStorageManager(tmp_path)
    with sm.store_path("id") as path:
        (path / "a").write_text("a")
        (path / "b").write_text("b")
    with caplog.at_level("WARNING", logger="trialkit.storage"):
        with sm.restore_path("id", selector=lambda rel: rel == "a") as restored:
            assert sorted(list_directory(restored)) == ["a", "b"]
    assert "selector ignored" in caplog.text


def test_delete_removes_the_checkpoint_and_is_idempotent(tmp_path: Path) -> None:
    sm = SharedFSStorageManager(tmp_path)
    with sm.store_path("id") as path:
        (path / "w.pt").write_text("x")
    sm.delete("id")
    assert not sm.exists("id") and not (tmp_path / "id").exists()
    sm.delete("id")  # already gone: no error


# String shortcuts ------------------------------------------------------------------------------


def test_from_string_paths_become_shared_fs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert from_string(str(tmp_path)) == {"type": "shared_fs", "host_path": str(tmp_path)}
    assert from_string(f"file://{tmp_path}") == {"type": "shared_fs", "host_path": str(tmp_path)}
    monkeypatch.chdir(tmp_path)
    assert from_string("ckpts") == {"type": "shared_fs", "host_path": str(tmp_path / "ckpts")}


def test_from_string_cloud_urls() -> None:
    assert from_string("s3://bucket/a/b") == {"type": "s3", "bucket": "bucket", "prefix": "a/b"}
    assert from_string("s3://bucket") == {"type": "s3", "bucket": "bucket", "prefix": None}
    assert from_string("gs://bkt/pre") == {"type": "gcs", "bucket": "bkt", "prefix": "pre"}


@pytest.mark.parametrize(
    ("shortcut", "message"),
    [
        ("", "empty string"),
        ("file://host/path", "no host"),
        ("/ckpts?versioned=1", "query"),
        ("/ckpts#frag", "fragment"),
        ("ftp://server/x", "unsupported scheme 'ftp'"),
    ],
)
def test_from_string_errors_name_the_problem(shortcut: str, message: str) -> None:
    with pytest.raises(StorageConfigError, match=message):
        from_string(shortcut)
    assert issubclass(StorageConfigError, ValueError)


# Config dicts ----------------------------------------------------------------------------------


def test_shared_fs_path_joins_storage_path_and_legacy_checkpoint_path(tmp_path: Path) -> None:
    assert shared_fs_path({"host_path": str(tmp_path)}) == tmp_path
    assert shared_fs_path({"host_path": str(tmp_path), "storage_path": None}) == tmp_path
    got = shared_fs_path({"host_path": str(tmp_path), "storage_path": "a/b"})
    assert got == (tmp_path / "a" / "b").resolve()
    legacy = shared_fs_path({"host_path": str(tmp_path), "checkpoint_path": "old"})
    assert legacy == (tmp_path / "old").resolve()


@pytest.mark.parametrize("escape", ["../outside", "a/../../outside", "/etc"])
def test_shared_fs_storage_path_must_stay_inside_host_path(tmp_path: Path, escape: str) -> None:
    with pytest.raises(StorageConfigError, match="storage_path"):
        shared_fs_path({"host_path": str(tmp_path / "host"), "storage_path": escape})


def test_build_from_shortcut_and_dicts(tmp_path: Path) -> None:
    sm = build(str(tmp_path / "a"))
    assert isinstance(sm, SharedFSStorageManager) and sm.base_path == tmp_path / "a"
    sm = build({"type": "shared_fs", "host_path": str(tmp_path), "storage_path": "ck"})
    assert isinstance(sm, SharedFSStorageManager)
    assert sm.base_path == (tmp_path / "ck").resolve()
    sm = build({"type": "directory", "container_path": str(tmp_path / "d")})
    assert isinstance(sm, SharedFSStorageManager) and sm.base_path == tmp_path / "d"


def test_build_takes_the_typed_storage_config(tmp_path: Path) -> None:
    """The master and trials pass the typed section; a dict is read into the same model."""
    block = {"type": "shared_fs", "host_path": str(tmp_path), "checkpoint_path": "ck"}
    typed = SharedFSStorage.model_validate(block)
    assert storage_model(block) == typed
    sm = build(typed)
    assert isinstance(sm, SharedFSStorageManager) and sm.base_path == (tmp_path / "ck").resolve()
    directory = DirectoryStorage(type="directory", container_path=str(tmp_path / "d"))
    assert build(directory).base_path == tmp_path / "d"  # type: ignore[attr-defined]


def test_built_manager_round_trips_a_checkpoint(tmp_path: Path) -> None:
    sm = build({"type": "shared_fs", "host_path": str(tmp_path), "storage_path": "ck"})
    with sm.store_path("x") as path:
        (path / "f").write_text("data")
    assert (tmp_path / "ck" / "x" / "f").read_text() == "data"


def test_build_rejects_missing_and_unknown_types() -> None:
    with pytest.raises(StorageConfigError, match="type: missing"):
        build({"host_path": "/tmp"})
    with pytest.raises(StorageConfigError, match="unknown type 'ftp'"):
        build({"type": "ftp"})


@pytest.mark.parametrize(
    ("config", "location"),
    [
        ({"type": "s3", "bucket": "b", "prefix": "p/q"}, "s3://b/p/q"),
        ("s3://bucket/prefix", "s3://bucket/prefix"),
        ({"type": "gcs", "bucket": "b"}, "gs://b"),
        ("gs://b/x", "gs://b/x"),
        ({"type": "azure", "container": "c", "connection_string": "x"}, "az://c"),
    ],
)
def test_build_cloud_types_without_contacting_them(config: Any, location: str) -> None:
    """build() is cheap (the master calls it on every checkpoint report): nothing is reached."""
    from trialkit.storage import ObjectStoreManager

    kind = config["type"] if isinstance(config, dict) else location.split(":")[0]
    pytest.importorskip({"s3": "s3fs", "gcs": "gcsfs", "gs": "gcsfs"}.get(kind, "adlfs"))

    manager = build(config)
    assert isinstance(manager, ObjectStoreManager) and manager.location == location
    assert manager._fs is None


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"type": "shared_fs"}, "host_path"),
        ({"type": "directory"}, "container_path"),
        ({"type": "s3"}, "bucket"),
        ({"type": "gcs"}, "bucket"),
        ({"type": "azure"}, "container"),
    ],
)
def test_build_names_a_missing_required_field(config: dict[str, str], field: str) -> None:
    with pytest.raises(StorageConfigError, match=field):
        build(config)


def test_stale_partials_are_removed_and_live_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partial directory is named after its writer's pid; only dead writers' are removed.
    The sweep (run at every launch) lists the partials directory only, not the storage
    directory with every checkpoint in it."""
    import os
    import subprocess
    import sys

    from trialkit.storage import PARTIALS

    base = tmp_path / "base"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    partials = base / PARTIALS
    for name in (f"a.{dead.stdout.strip()}", f"b.{os.getpid()}", "not-a-partial"):
        (partials / name).mkdir(parents=True)
    sm = SharedFSStorageManager(base)
    for i in range(20):
        with sm.store_path(f"ck{i}") as path:
            (path / "w").write_text("w")

    listed: list[Path] = []
    real_iterdir = Path.iterdir

    def recording_iterdir(self: Path) -> Any:
        listed.append(self)
        return real_iterdir(self)

    with monkeypatch.context() as patched:
        patched.setattr(Path, "iterdir", recording_iterdir)
        removed = sm.remove_stale_partials()
    assert listed == [partials]
    assert [p.name for p in removed] == [f"a.{dead.stdout.strip()}"]
    assert sorted(p.name for p in partials.iterdir()) == [f"b.{os.getpid()}", "not-a-partial"]
    with sm.store_path("f") as path:
        assert path == partials / f"f.{os.getpid()}"
        assert [p.name for p in sm.remove_stale_partials()] == []  # a live process writes it
    assert sm.exists("f")


def test_the_partials_directory_goes_once_empty(tmp_path: Path) -> None:
    """The storage directory holds only checkpoints after saves, failed ones included."""
    sm = SharedFSStorageManager(tmp_path)
    with sm.store_path("a") as path:
        (path / "w").write_text("w")
    with pytest.raises(RuntimeError), sm.store_path("b") as path:
        raise RuntimeError("the save failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


def test_concurrent_saves_never_trip_over_the_partials_directory(tmp_path: Path) -> None:
    """Two writers: one's save ends and removes the (empty) partials directory while the other
    creates it; the other must retry, not fail (two trials on one storage failed with
    FileExistsError: '<storage>/.trialkit-partials')."""
    import threading

    errors: list[BaseException] = []

    def saves(name: str) -> None:
        sm = SharedFSStorageManager(tmp_path)
        try:
            for i in range(1500):
                with sm.store_path(f"{name}-{i}"):
                    pass
                sm.delete(f"{name}-{i}")
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    writers = [threading.Thread(target=saves, args=(n,)) for n in ("a", "b", "c")]
    for w in writers:
        w.start()
    for w in writers:
        w.join(timeout=120)
    assert errors == []
