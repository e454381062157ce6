"""The journal of a local-mode run (``core.init()`` with no master): append-only JSON lines
under ``$TRIALKIT_HOME/local-runs/<key>.jsonl``, private to the user. The run only appends; the
master, the store's one writer, ingests it (master/ingest/_local_runs.py). Shared by both sides,
so it imports neither."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._home import PRIVATE_FILE, ensure_private_dir
from .._json import dumps

#: Under the home: one journal per local run.
LOCAL_RUNS_DIR = "local-runs"
JOURNAL_SUFFIX = ".jsonl"


def local_runs_dir(home: Path) -> Path:
    """Where the local runs of ``home`` keep their journals."""
    return home / LOCAL_RUNS_DIR


def new_run_key() -> str:
    """A fresh name for a local run: it names the journal until the master gives it ids. Keys
    sort by start time, so the master stores runs (and numbers them) in the order they began."""
    return f"{time.time_ns():016x}{uuid.uuid4().hex[:16]}"


def journal_path(home: Path, key: str) -> Path:
    """The journal of the local run ``key``."""
    return local_runs_dir(home) / f"{key}{JOURNAL_SUFFIX}"


def local_tensorboard_dir(key: str) -> str:
    """The TensorBoard directory of the local run ``key`` (under ``$TRIALKIT_HOME/tensorboard``
    and, uploaded, under checkpoint storage's ``tensorboard/``) until it has ids."""
    return f"local-{key}"


class JournalWriter:
    """Appends entries to a run's journal, one ``write`` per line so that ranks sharing the
    journal never interleave inside a line (O_APPEND)."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        """Open ``path`` to append; ``create`` False joins a journal that must exist (a rank
        joining its chief's run)."""
        ensure_private_dir(path.parent)
        self.path = path
        flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0)
        self._fd: int | None = os.open(path, flags, PRIVATE_FILE)
        os.fchmod(self._fd, PRIVATE_FILE)

    def append(self, kind: str, *, durable: bool = False, **fields: Any) -> None:
        """Append one entry ``{"kind", "at", **fields}``; ``durable`` waits until it is on disk."""
        if self._fd is None:
            raise RuntimeError(f"local-run journal {self.path} is closed")
        line = (dumps({"kind": kind, "at": time.time(), **fields}) + "\n").encode()
        written = os.write(self._fd, line)
        if written != len(line):  # a full disk: the line is half there, and so is ingest's view
            raise OSError(f"local-run journal {self.path}: wrote {written} of {len(line)} bytes")
        if durable:
            os.fsync(self._fd)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def close(self) -> None:
        """Flush to disk and close (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def read_entries(
    path: Path, offset: int = 0, limit: int | None = None
) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """The complete entries from byte ``offset`` on (about ``limit`` bytes of them, at least
    one line), each with its own offset, and the offset after the last complete line read: a
    half-written last line waits until it is complete."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(-1 if limit is None else limit)
            if limit is not None and b"\n" not in data:  # a line longer than the limit
                data += f.readline()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    return list(_parse(data[:end], offset)), offset + end


def _parse(data: bytes, offset: int) -> Iterator[tuple[int, dict[str, Any]]]:
    for line in data.splitlines(keepends=True):
        try:
            entry = json.loads(line)
        except ValueError:  # not ours (a line torn by a crash mid-write, then appended to)
            entry = None
        if isinstance(entry, dict) and isinstance(entry.get("kind"), str):
            yield offset, entry
        offset += len(line)
