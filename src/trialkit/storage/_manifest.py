"""A checkpoint's manifest: every file's relative path, size and sha256, written last.

An object store has no atomic rename, so a checkpoint counts as present only once its
manifest is: a writer that dies mid-upload leaves objects without one, which readers treat
as absent and ``remove_stale_partials`` deletes. Downloads check each file against it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Stored beside the checkpoint's files, under the same storage id; never listed as one of them.
MANIFEST_NAME = ".trialkit-manifest.json"
_VERSION = 1
_BLOCK = 1 << 20


class CheckpointIntegrityError(ValueError):
    """A downloaded file differs from what its checkpoint's manifest recorded."""

    __module__ = "trialkit.storage"


@dataclass(frozen=True)
class FileEntry:
    """One file of a checkpoint as it was uploaded."""

    size: int
    sha256: str


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
        files = {rel: {"size": e.size, "sha256": e.sha256} for rel, e in sorted(self.files.items())}
        body = {"version": _VERSION, "files": files, "dirs": sorted(self.dirs)}
        return json.dumps(body, indent=1).encode()

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> Manifest:
        """Parse a stored manifest; a damaged one is a CheckpointIntegrityError naming it."""
        try:
            body: dict[str, Any] = json.loads(data)
            files = {
                str(rel): FileEntry(int(e["size"]), str(e["sha256"]))
                for rel, e in body["files"].items()
            }
            return cls(files, {str(d) for d in body.get("dirs", [])})
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise CheckpointIntegrityError(f"{where}: damaged checkpoint manifest ({e})") from None


def sha256_of(path: Path) -> str:
    """The file's sha256, read in blocks (a 1 GB file is never held in memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def entry_of(path: Path) -> FileEntry:
    return FileEntry(path.stat().st_size, sha256_of(path))


def verify(path: Path, expected: FileEntry, where: str) -> None:
    """Raise CheckpointIntegrityError naming ``where`` if ``path`` is not the recorded file."""
    size = path.stat().st_size
    if size != expected.size:
        raise CheckpointIntegrityError(
            f"{where}: {size} bytes downloaded, the manifest says {expected.size}; the stored "
            "object is damaged or was replaced"
        )
    if sha256_of(path) != expected.sha256:
        raise CheckpointIntegrityError(
            f"{where}: sha256 differs from the checkpoint's manifest; the stored object is "
            "damaged or was replaced"
        )
