"""Storage that refuses a checkpoint's writes gives one CheckpointStorageError line naming the
checkpoint, the OS reason and what to do, and leaves nothing in storage."""

from __future__ import annotations

import errno
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest

from trialkit.storage import CheckpointStorageError, SharedFSStorageManager


@pytest.fixture
def file_size_limit() -> Iterator[int]:
    """Writes past 64 KiB fail with EFBIG (Python ignores SIGXFSZ), as on a full disk."""
    limit = 64 * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield limit
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def _assert_clear(e: CheckpointStorageError, checkpoint: Path) -> None:
    message = str(e)
    assert "\n" not in message and e.__cause__ is None
    assert message == (
        f"cannot save checkpoint {checkpoint}: File too large (EFBIG); raise the file size limit "
        "(ulimit -f) or save smaller files, or choose another checkpoint_storage.host_path"
    )


def test_store_path_over_the_limit_is_one_clear_line(tmp_path: Path, file_size_limit: int) -> None:
    storage = SharedFSStorageManager(tmp_path / "ck")
    with pytest.raises(CheckpointStorageError) as info:
        with storage.store_path("abc") as path:
            (path / "big.bin").write_bytes(b"x" * (2 * file_size_limit))
    _assert_clear(info.value, tmp_path / "ck" / "abc")
    assert list((tmp_path / "ck").iterdir()) == []


def test_upload_over_the_limit_is_one_clear_line(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "big.bin").write_bytes(b"x" * 256 * 1024)  # before the limit applies
    storage = SharedFSStorageManager(tmp_path / "ck")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, hard))
    try:
        with pytest.raises(CheckpointStorageError) as info:
            storage.upload(src, "abc", ["big.bin"])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    _assert_clear(info.value, tmp_path / "ck" / "abc")
    assert list((tmp_path / "ck").iterdir()) == []


def test_an_unreadable_file_elsewhere_is_not_blamed_on_storage(tmp_path: Path) -> None:
    """The saving code failing to read its own input is its error, not the storage's."""
    storage = SharedFSStorageManager(tmp_path / "ck")
    elsewhere = str(tmp_path / "elsewhere" / "weights.bin")
    with pytest.raises(PermissionError) as info:
        with storage.store_path("abc"):
            raise PermissionError(errno.EACCES, "Permission denied", elsewhere)
    assert not isinstance(info.value, CheckpointStorageError)
    assert info.value.filename == elsewhere
    assert list((tmp_path / "ck").iterdir()) == []
