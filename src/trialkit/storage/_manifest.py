"""A checkpoint's manifest: every file's relative path, size and checksum, written last.

An object store has no atomic rename, so a checkpoint counts as present only once its
manifest is: a writer that dies mid-upload leaves objects without one, which readers treat
as absent and ``remove_stale_partials`` deletes. Downloads check each file against it.
shared_fs writes the same manifest into the checkpoint directory before renaming it into
place; its entries carry a crc32 computed while copying (sha256 would halve the copy speed),
object stores' a sha256. Each entry names its algorithm, so one reader checks both.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Stored beside the checkpoint's files, under the same storage id; never listed as one of them.
MANIFEST_NAME = ".trialkit-manifest.json"
_VERSION = 1
_BLOCK = 1 << 20
#: crc32's read size: a block stays in the CPU cache from its read to its crc (and its write,
#: when copying). Of 256 KiB, 1 MiB and 2 MiB, 1 MiB cost the least CPU (fewest calls).
CRC_BLOCK = 1 << 20


def _fastest_crc32() -> tuple[Callable[[Any, int], int], str]:
    """zlib-ng's crc32 (a dependency; zlib's where it could not be installed): the same CRC-32,
    so either checks any manifest. zlib-ng's uses carry-less multiplication (PCLMULQDQ,
    ARMv8 PMULL), many times zlib's speed: with zlib the checksum, not the copy, was the cost of
    a shared_fs save (bench/README.md: crc32). Both release the GIL."""
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        return zlib.crc32, "zlib"
    return zlib_ng.crc32, "zlib-ng"


#: ``crc32(data, value)`` as ``zlib.crc32``; CRC32_IMPLEMENTATION names the module it is from.
crc32, CRC32_IMPLEMENTATION = _fastest_crc32()


class CheckpointIntegrityError(ValueError):
    """A downloaded file differs from what its checkpoint's manifest recorded."""

    __module__ = "trialkit.storage"


#: Checksum algorithms an entry may carry: its key in the manifest's JSON.
ALGORITHMS = ("sha256", "crc32")


@dataclass(frozen=True)
class FileEntry:
    """One file of a checkpoint as it was stored: size and hex digest by ``algorithm``."""

    size: int
    digest: str
    algorithm: str = "sha256"


@dataclass
class Manifest:
    """The files (relpath -> entry) and directories (relpaths ending in '/') of a checkpoint."""

    files: dict[str, FileEntry] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)

    def resources(self) -> dict[str, int]:
        """relpath -> size, directories (given or implied by a file's path) with size 0."""
        out: dict[str, int] = {d: 0 for d in self.dirs}
        for rel, entry in self.files.items():
            parts = rel.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                out["/".join(parts[:i]) + "/"] = 0
            out[rel] = entry.size
        return dict(sorted(out.items()))

    def merged(self, other: Manifest) -> Manifest:
        """This manifest with ``other``'s entries added (a sharded checkpoint's later ranks)."""
        return Manifest({**self.files, **other.files}, self.dirs | other.dirs)

    def to_bytes(self) -> bytes:
        files = {
            rel: {"size": e.size, e.algorithm: e.digest} for rel, e in sorted(self.files.items())
        }
        body = {"version": _VERSION, "files": files, "dirs": sorted(self.dirs)}
        return json.dumps(body, indent=1).encode()

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> Manifest:
        """Parse a stored manifest; a damaged one is a CheckpointIntegrityError naming it."""
        try:
            body: Any = json.loads(data)
            files = _files(body)
            return cls(files, {str(d) for d in body.get("dirs", [])})
        except (ValueError, TypeError) as e:
            raise CheckpointIntegrityError(
                f"{where}: damaged checkpoint manifest ({e}); {WHAT_TO_DO}"
            ) from None


def _files(body: Any) -> dict[str, FileEntry]:
    """The ``files`` object of a parsed manifest; ValueError saying what is missing."""
    if not isinstance(body, dict) or not isinstance(body.get("files"), dict):
        raise ValueError("it has no 'files' object")
    return {str(rel): _entry(str(rel), e) for rel, e in body["files"].items()}


def _entry(rel: str, body: Any) -> FileEntry:
    if not isinstance(body, dict) or "size" not in body:
        raise ValueError(f"{rel!r} has no 'size'")
    known = [a for a in ALGORITHMS if a in body]
    if not known:
        raise ValueError(f"{rel!r} has no checksum ({' or '.join(ALGORITHMS)})")
    algorithm = known[0]
    return FileEntry(int(body["size"]), str(body[algorithm]), algorithm)


def sha256_of(path: Path) -> str:
    """The file's sha256, read in blocks (a 1 GB file is never held in memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def crc32_hex(crc: int) -> str:
    """A crc32 value as the manifest writes it."""
    return f"{crc & 0xFFFFFFFF:08x}"


def crc32_of(path: Path) -> str:
    """The file's crc32, read in blocks into one reused buffer (no allocation per block)."""
    crc = 0
    buf = bytearray(CRC_BLOCK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            crc = crc32(view[:n], crc)
    return crc32_hex(crc)


def checksum_of(path: Path, algorithm: str) -> str:
    return sha256_of(path) if algorithm == "sha256" else crc32_of(path)


def entry_of(path: Path, algorithm: str = "sha256") -> FileEntry:
    return FileEntry(path.stat().st_size, checksum_of(path, algorithm), algorithm)


#: What a reader can do about a damaged checkpoint (appended to integrity errors).
WHAT_TO_DO = (
    "load another checkpoint (trialkit checkpoint list) or delete this one "
    "(trialkit checkpoint delete UUID)"
)


def verify(path: Path, expected: FileEntry, where: str) -> None:
    """Raise CheckpointIntegrityError naming ``where`` if ``path`` is not the recorded file."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise CheckpointIntegrityError(
            f"{where}: missing, but the checkpoint's manifest lists it; {WHAT_TO_DO}"
        ) from None
    if size != expected.size:
        raise CheckpointIntegrityError(
            f"{where}: {size} bytes, the manifest says {expected.size}; the stored file is "
            f"damaged or was replaced: {WHAT_TO_DO}"
        )
    if checksum_of(path, expected.algorithm) != expected.digest:
        raise CheckpointIntegrityError(
            f"{where}: {expected.algorithm} differs from the checkpoint's manifest; the stored "
            f"file is damaged or was replaced: {WHAT_TO_DO}"
        )
