"""shared_fs checkpoints carry the object stores' manifest (sizes + checksums): written before
the checkpoint becomes visible, checked by restore_path and download (issue 19 item 2)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trialkit.storage import (
    MANIFEST_NAME,
    CheckpointIntegrityError,
    SharedFSStorageManager,
    list_directory,
)
from trialkit.storage._manifest import (
    WHAT_TO_DO,
    FileEntry,
    Manifest,
    crc32_hex,
    entry_of,
    verify,
)


def saved(tmp_path: Path, *, via_upload: bool) -> tuple[SharedFSStorageManager, Path]:
    sm = SharedFSStorageManager(tmp_path / "store")
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "model.pt").write_bytes(os.urandom(3 * 2**20 + 17))
    (src / "sub" / "opt.pt").write_bytes(b"optimizer")
    (src / "empty").mkdir()
    if via_upload:
        sm.upload(src, "ck", sorted(list_directory(src)))
    else:
        with sm.store_path("ck") as path:
            shutil.copytree(src, path, dirs_exist_ok=True)
    return sm, sm.base_path / "ck"


@pytest.mark.parametrize("via_upload", [True, False], ids=["upload", "store_path"])
def test_a_saved_checkpoint_has_a_manifest_of_sizes_and_checksums(
    tmp_path: Path, via_upload: bool
) -> None:
    sm, ck = saved(tmp_path, via_upload=via_upload)
    body = json.loads((ck / MANIFEST_NAME).read_text())
    assert sorted(body["files"]) == ["model.pt", "sub/opt.pt"]
    assert body["files"]["sub/opt.pt"] == {"size": 9, "crc32": f"{zlib.crc32(b'optimizer'):08x}"}
    assert body["dirs"] == ["empty/", "sub/"]
    # the manifest is not one of the checkpoint's files
    assert sm.list_files("ck") == {"empty/": 0, "model.pt": 3 * 2**20 + 17, "sub/": 0,
                                   "sub/opt.pt": 9}  # fmt: skip
    out = tmp_path / "out"
    sm.download("ck", out)
    assert sorted(list_directory(out)) == ["empty/", "model.pt", "sub/", "sub/opt.pt"]
    assert not (out / MANIFEST_NAME).exists()
    assert (out / "model.pt").read_bytes() == (tmp_path / "src" / "model.pt").read_bytes()


def damage(ck: Path, how: str) -> None:
    target = ck / "sub" / "opt.pt"
    if how == "flipped":
        target.write_bytes(b"optimizeR")  # same size
    elif how == "truncated":
        target.write_bytes(b"opt")
    else:
        target.unlink()


@pytest.mark.parametrize("how", ["flipped", "truncated", "missing"])
def test_restore_and_download_refuse_a_damaged_file_in_one_line(tmp_path: Path, how: str) -> None:
    sm, ck = saved(tmp_path, via_upload=True)
    damage(ck, how)
    for attempt in ("restore", "download"):
        with pytest.raises(CheckpointIntegrityError) as err:
            if attempt == "restore":
                with sm.restore_path("ck"):
                    pass
            else:
                sm.download("ck", tmp_path / f"out-{how}")
        message = str(err.value)
        assert "\n" not in message
        assert str(ck / "sub" / "opt.pt") in message
        assert "trialkit checkpoint delete" in message  # what to do


def test_a_checkpoint_without_manifest_from_an_older_trialkit_still_loads(tmp_path: Path) -> None:
    sm, ck = saved(tmp_path, via_upload=True)
    (ck / MANIFEST_NAME).unlink()  # what trialkit wrote before shared_fs had manifests
    (ck / "sub" / "opt.pt").write_bytes(b"edited by hand")
    with sm.restore_path("ck") as path:
        assert (path / "sub" / "opt.pt").read_bytes() == b"edited by hand"
    sm.download("ck", tmp_path / "out")
    assert (tmp_path / "out" / "sub" / "opt.pt").read_bytes() == b"edited by hand"
    assert sm.list_files("ck")["sub/opt.pt"] == 14


def test_a_sharded_checkpoint_merges_the_manifests(tmp_path: Path) -> None:
    sm = SharedFSStorageManager(tmp_path / "store")
    for rank in range(2):
        src = tmp_path / f"r{rank}"
        src.mkdir()
        (src / f"rank{rank}.pt").write_text(str(rank))
        sm.upload(src, "ck", [f"rank{rank}.pt"])
    body = json.loads((sm.base_path / "ck" / MANIFEST_NAME).read_text())
    assert sorted(body["files"]) == ["rank0.pt", "rank1.pt"]
    (sm.base_path / "ck" / "rank0.pt").write_text("X")
    with pytest.raises(CheckpointIntegrityError, match="rank0.pt"):
        with sm.restore_path("ck"):
            pass


def test_a_save_killed_midway_is_never_visible_and_is_cleaned_up(tmp_path: Path) -> None:
    """A writer killed while copying leaves only its partial directory: the checkpoint does
    not exist (so it is never offered as latest), and the next sweep removes the leftovers."""
    store = tmp_path / "store"
    src = tmp_path / "src"
    src.mkdir()
    for i in range(4):
        (src / f"f{i}").write_bytes(b"x" * 2**20)
    script = (
        "import os, sys\n"
        "from trialkit.storage import _shared_fs as m\n"
        "real = m._copy_file\n"
        "def copy_then_die(s, d):\n"
        "    e = real(s, d)\n"
        "    if s.name == 'f2': os._exit(9)\n"
        "    return e\n"
        "m._copy_file = copy_then_die\n"
        "m.SharedFSStorageManager.workers = 1\n"
        f"m.SharedFSStorageManager({str(store)!r}).upload({str(src)!r}, 'ck', "
        "['f0', 'f1', 'f2', 'f3'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], timeout=120)
    assert proc.returncode == 9
    sm = SharedFSStorageManager(store)
    assert not sm.exists("ck")
    assert [p.name for p in store.iterdir() if not p.name.startswith(".")] == []
    removed = sm.remove_stale_partials()
    assert len(removed) == 1
    assert list_directory(store) == {}


def test_core_download_mode_is_checked_not_ignored(tmp_path: Path) -> None:
    """Both DownloadModes (or their values) work; anything else is a one-line ValueError."""
    from trialkit import core

    with core.init(checkpoint_storage=str(tmp_path / "ck")) as ctx:
        src = tmp_path / "src"
        src.mkdir()
        (src / "w").write_text("w")
        sid = ctx.checkpoint.upload(src, {"steps_completed": 1})
        for mode in (*core.DownloadMode, "NO_SHARED_DOWNLOAD"):
            out = tmp_path / f"out-{getattr(mode, 'name', mode)}"
            ctx.checkpoint.download(sid, out, download_mode=mode)  # type: ignore[arg-type]
            assert (out / "w").read_text() == "w"
            with ctx.checkpoint.restore_path(sid, download_mode=mode) as path:  # type: ignore[arg-type]
                assert (path / "w").read_text() == "w"
        with pytest.raises(
            ValueError, match=r"download_mode 'MASTER' is not one of DownloadMode\."
        ):
            ctx.checkpoint.download(sid, tmp_path / "x", download_mode="MASTER")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="download_mode"):
            with ctx.checkpoint.restore_path(sid, download_mode="fast"):  # type: ignore[arg-type]
                pass


def use_crc32(monkeypatch: pytest.MonkeyPatch, implementation: str) -> None:
    """Make shared_fs compute crc32s with zlib's or zlib-ng's function (both, where installed)."""
    from trialkit.storage import _manifest, _shared_fs

    if implementation == "zlib-ng":
        fn = pytest.importorskip("zlib_ng.zlib_ng").crc32
    else:
        fn = zlib.crc32
    monkeypatch.setattr(_manifest, "crc32", fn)
    monkeypatch.setattr(_shared_fs, "crc32", fn)


CRC32_IMPLEMENTATIONS = pytest.mark.parametrize("implementation", ["zlib", "zlib-ng"])


def test_without_zlib_ng_the_crc32_is_zlibs(monkeypatch: pytest.MonkeyPatch) -> None:
    from trialkit.storage._manifest import _fastest_crc32

    monkeypatch.setitem(sys.modules, "zlib_ng", None)  # not installed: its import fails
    assert _fastest_crc32() == (zlib.crc32, "zlib")


def test_zlib_ng_computes_zlibs_crc32_block_by_block() -> None:
    zlib_ng = pytest.importorskip("zlib_ng.zlib_ng")
    data = os.urandom(2**20 + 7)
    for cut in (0, 1, 4095, 2**18, len(data)):
        head, tail = memoryview(data)[:cut], memoryview(data)[cut:]
        assert zlib_ng.crc32(tail, zlib_ng.crc32(head)) == zlib.crc32(data)


def files_of_many_sizes(src: Path) -> dict[str, bytes]:
    """Empty, one block exactly, one byte past it, and many blocks with a short last one."""
    from trialkit.storage._manifest import CRC_BLOCK

    contents = {
        "empty": b"",
        "one-block": os.urandom(CRC_BLOCK),
        "block-and-a-byte": os.urandom(CRC_BLOCK + 1),
        "sub/many-blocks": os.urandom(3 * CRC_BLOCK + 4097),
    }
    for rel, data in contents.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    return contents


@CRC32_IMPLEMENTATIONS
@pytest.mark.parametrize("via_upload", [True, False], ids=["upload", "store_path"])
def test_each_manifest_crc_is_zlibs_crc32_of_the_stored_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, implementation: str, via_upload: bool
) -> None:
    use_crc32(monkeypatch, implementation)
    src = tmp_path / "src"
    contents = files_of_many_sizes(src)
    sm = SharedFSStorageManager(tmp_path / "store")
    if via_upload:
        sm.upload(src, "ck", sorted(list_directory(src)))
    else:
        with sm.store_path("ck") as path:
            shutil.copytree(src, path, dirs_exist_ok=True)
    ck = sm.base_path / "ck"
    body = json.loads((ck / MANIFEST_NAME).read_text())
    for rel, data in contents.items():
        stored = (ck / rel).read_bytes()
        assert stored == data
        assert body["files"][rel] == {"size": len(data), "crc32": f"{zlib.crc32(stored):08x}"}


def uploaded_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, implementation: str
) -> tuple[Path, SharedFSStorageManager]:
    """Files of many sizes uploaded as checkpoint "ck", their crc32s by ``implementation``:
    the source directory and the storage."""
    use_crc32(monkeypatch, implementation)
    src = tmp_path / "src"
    files_of_many_sizes(src)
    sm = SharedFSStorageManager(tmp_path / "store")
    sm.upload(src, "ck", sorted(list_directory(src)))
    return src, sm


@pytest.mark.parametrize(("saved_by", "checked_by"), [("zlib", "zlib-ng"), ("zlib-ng", "zlib")])
def test_a_checkpoint_saved_with_either_crc32_is_checked_by_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, saved_by: str, checked_by: str
) -> None:
    src, sm = uploaded_with(tmp_path, monkeypatch, saved_by)
    use_crc32(monkeypatch, checked_by)
    with sm.restore_path("ck"):
        pass
    sm.download("ck", tmp_path / "out")
    assert (tmp_path / "out" / "sub" / "many-blocks").read_bytes() == (
        src / "sub" / "many-blocks"
    ).read_bytes()


def flip_a_byte_past_the_first_blocks(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) - 5000] ^= 0x01
    path.write_bytes(bytes(data))


def cut_the_last_byte(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-1])


@CRC32_IMPLEMENTATIONS
@pytest.mark.parametrize(
    "damaging", [flip_a_byte_past_the_first_blocks, cut_the_last_byte], ids=lambda f: f.__name__
)
def test_restore_refuses_a_large_file_damaged_after_its_first_blocks(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    implementation: str,
    damaging: Callable[[Path], None],
) -> None:
    _, sm = uploaded_with(tmp_path, monkeypatch, implementation)
    damaged = sm.base_path / "ck" / "sub" / "many-blocks"
    damaging(damaged)
    what = (
        "crc32 differs" if damaging is flip_a_byte_past_the_first_blocks else "bytes, the manifest"
    )
    with pytest.raises(CheckpointIntegrityError, match=what) as err:
        with sm.restore_path("ck"):
            pass
    assert str(damaged) in str(err.value)
    with pytest.raises(CheckpointIntegrityError, match=what):
        sm.download("ck", tmp_path / "out")


def test_manifest_resources_list_every_parent_directory_of_a_file() -> None:
    manifest = Manifest(
        {
            "a/b/c/deep.pt": FileEntry(3, "x"),
            "a/top.pt": FileEntry(2, "y"),
            "m.pt": FileEntry(1, "z"),
        },
        {"empty/"},
    )
    assert manifest.resources() == {
        "a/": 0, "a/b/": 0, "a/b/c/": 0, "a/b/c/deep.pt": 3, "a/top.pt": 2, "empty/": 0, "m.pt": 1,
    }  # fmt: skip
    assert list(manifest.resources()) == sorted(manifest.resources())


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"version": 1}, "it has no 'files' object"),
        ({"version": 1, "files": ["model.pt"]}, "it has no 'files' object"),
        ({"files": {"model.pt": {"crc32": "00000000"}}}, "'model.pt' has no 'size'"),
        ({"files": {"model.pt": {"size": 3}}}, "'model.pt' has no checksum (sha256 or crc32)"),
    ],
)
def test_a_manifest_without_files_or_sizes_is_an_integrity_error_naming_the_checkpoint(
    tmp_path: Path, body: dict[str, Any], why: str
) -> None:
    # valid JSON, but not a manifest: one line naming the checkpoint's manifest and what to do
    sm, ck = saved(tmp_path, via_upload=False)
    (ck / MANIFEST_NAME).write_text(json.dumps(body))
    with pytest.raises(CheckpointIntegrityError) as info:
        with sm.restore_path("ck"):
            pass
    message = str(info.value)
    assert message.startswith(f"{ck / MANIFEST_NAME}: damaged checkpoint manifest ({why}); ")
    assert message.endswith(WHAT_TO_DO) and "\n" not in message


def test_entries_default_to_sha256_and_verify_checks_by_the_entrys_algorithm(
    tmp_path: Path,
) -> None:
    f = tmp_path / "model.pt"
    data = os.urandom(2**20 + 5)  # more than one read block
    f.write_bytes(data)
    sha = entry_of(f)
    assert sha == FileEntry(len(data), hashlib.sha256(data).hexdigest(), "sha256")
    assert entry_of(f, "crc32") == FileEntry(len(data), crc32_hex(zlib.crc32(data)), "crc32")
    verify(f, sha, "model.pt")  # the object stores' entries: checked by sha256, and pass
    f.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(CheckpointIntegrityError, match="^model.pt: sha256 differs"):
        verify(f, sha, "model.pt")


def test_merged_manifests_keep_both_files_and_directories() -> None:
    a = Manifest({"rank0.pt": FileEntry(1, "a")}, {"rank0/"})
    b = Manifest({"rank1.pt": FileEntry(2, "b")}, {"rank1/"})
    merged = a.merged(b)
    assert merged.files == {**a.files, **b.files} and merged.dirs == {"rank0/", "rank1/"}


def test_the_crc32_comes_from_zlib_ng_where_it_is_installed() -> None:
    from zlib_ng import zlib_ng

    from trialkit.storage._manifest import _fastest_crc32

    assert _fastest_crc32() == (zlib_ng.crc32, "zlib-ng")


def test_the_manifest_format_version_1_and_dirs_optional() -> None:
    manifest = Manifest({"m.pt": FileEntry(1, "00000000", "crc32")}, {"d/"})
    body = json.loads(manifest.to_bytes())
    assert body == {
        "version": 1,
        "files": {"m.pt": {"size": 1, "crc32": "00000000"}},
        "dirs": ["d/"],
    }
    del body["dirs"]  # a manifest of files only (no empty directories) may leave it out
    assert Manifest.from_bytes(json.dumps(body).encode(), "m") == Manifest(manifest.files)
