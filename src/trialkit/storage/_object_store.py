"""Checkpoints in an object store (S3, GCS, Azure Blob) through fsspec:
``<bucket>/<prefix>/<storage_id>/...`` plus the manifest, which is written last."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from ._base import (
    PARTIALS,
    CheckpointNotFound,
    CheckpointStorageError,
    Selector,
    StorageManager,
    check_relative,
    check_storage_id,
    list_directory,
)
from ._cloud import Backend, first_line, kind_of
from ._manifest import MANIFEST_NAME, Manifest, entry_of, verify

logger = logging.getLogger("trialkit.storage")
T = TypeVar("T")

#: Objects of a storage id without a manifest are a crashed writer's once this old (seconds).
STALE_PARTIAL_AGE = 3600.0
#: ``<root>/<PARTIALS>/<storage id>``: a marker object that an upload writes before its first
#: file and deletes after the manifest, so the stale-partial sweep lists the markers only.


class ObjectStoreManager(StorageManager):
    """One manager for every object store; the backend only builds the filesystem.

    Files move in parallel (``workers`` threads), large ones in parts; a request that fails
    transiently (connection reset, 5xx, throttling) is retried with exponential backoff, and a
    permanent failure is one CheckpointStorageError naming the object and what is missing."""

    def __init__(
        self,
        backend: Backend,
        *,
        workers: int = 8,
        retries: int = 6,
        backoff: float = 0.25,
        stale_age: float = STALE_PARTIAL_AGE,
    ) -> None:
        self.backend = backend
        self.workers = workers
        self.retries = retries
        self.backoff = backoff
        self.stale_age = stale_age
        self._fs: Any = None
        self._lock = threading.Lock()

    @property
    def location(self) -> str:
        return self.backend.location

    @property
    def fs(self) -> Any:
        """The filesystem, built on first use (importing the optional package then)."""
        with self._lock:
            if self._fs is None:
                self._fs = self.backend.filesystem()
            return self._fs

    def _key(self, storage_id: str, rel: str = "") -> str:
        return "/".join(p for p in (self.backend.root, check_storage_id(storage_id), rel) if p)

    def _marker(self, storage_id: str) -> str:
        parts = (self.backend.root, PARTIALS, check_storage_id(storage_id))
        return "/".join(p for p in parts if p)

    def _url(self, key: str) -> str:
        return f"{self.backend.scheme}://{key}"

    # -- requests, retried --------------------------------------------------------------

    def _call(self, op: str, key: str, fn: Callable[[], T], tries: int | None = None) -> T:
        """``fn()`` with retries on transient errors; a permanent one becomes one line."""
        tries = tries or self.retries
        for attempt in range(tries):
            try:
                return fn()
            except (CheckpointStorageError, CheckpointNotFound):
                raise
            except Exception as e:
                kind = kind_of(e)
                if kind != "transient":
                    raise self._permanent(op, key, kind, e) from e
                if attempt == tries - 1:
                    raise CheckpointStorageError(
                        f"{self._url(key)}: {op} still failing after {tries} tries "
                        f"({first_line(e)}); check that the store is up and reachable"
                    ) from e
                delay = min(self.backoff * 2**attempt, 8.0) * (0.5 + random.random() / 2)
                logger.warning(
                    "%s %s failed (%s); retrying in %.1fs", op, self._url(key), first_line(e), delay
                )
                time.sleep(delay)
        raise AssertionError("unreachable")

    def _permanent(self, op: str, key: str, kind: str, e: Exception) -> Exception:
        b = self.backend
        where = self._url(key)
        if kind == "credentials":
            return CheckpointStorageError(
                f"{where}: the store rejected the credentials ({first_line(e)}); fix "
                "checkpoint_storage's credentials or the environment's"
            )
        if kind == "denied":
            return CheckpointStorageError(
                f"{where}: access denied for {op}; the credentials need {b.permissions[op]} "
                f"on {b.container_word} {b.container!r}"
            )
        if kind == "no-container" or (kind == "missing" and op != "read" and not self._has_root()):
            return CheckpointStorageError(
                f"{where}: no such {b.container_word} {b.container!r}; create it or fix "
                f"checkpoint_storage.{b.container_field}"
            )
        if kind == "missing":
            return CheckpointNotFound(f"{where}: not in storage")
        return CheckpointStorageError(f"{where}: {op} failed ({first_line(e)})")

    def _has_root(self) -> bool:
        try:
            return bool(self.fs.exists(self.backend.container))
        except Exception:
            return True  # cannot tell: report the original error as it is

    # -- writing ------------------------------------------------------------------------

    def _put(self, src: Path, rel: str, storage_id: str) -> tuple[str, Any]:
        entry = entry_of(src / rel)
        key = self._key(storage_id, rel)
        self._call("write", key, lambda: self.fs.put_file(str(src / rel), key, **self._put_kw()))
        return rel, entry

    def _put_kw(self) -> dict[str, Any]:
        return dict(self.backend.put_kwargs)

    def _read_manifest(self, storage_id: str) -> Manifest | None:
        key = self._key(storage_id, MANIFEST_NAME)
        try:
            data = self._call("read", key, lambda: self.fs.cat_file(key))
        except CheckpointNotFound:
            return None
        return Manifest.from_bytes(data, self._url(key))

    def _write_manifest(self, storage_id: str, manifest: Manifest) -> None:
        key = self._key(storage_id, MANIFEST_NAME)
        self._call("write", key, lambda: self.fs.pipe_file(key, manifest.to_bytes()))

    def upload(self, src: str | os.PathLike[str], storage_id: str, paths: list[str]) -> None:
        """Upload the files in parallel, then the manifest (merged with one already there:
        the ranks of a sharded checkpoint upload one after another)."""
        src = Path(src)
        files = [p for p in paths if not p.endswith("/") and p != MANIFEST_NAME]
        added = Manifest(dirs={p for p in paths if p.endswith("/")})
        marker = self._marker(storage_id)
        self._call("write", marker, lambda: self.fs.pipe_file(marker, str(os.getpid()).encode()))
        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(files)))) as pool:
            for rel, entry in pool.map(lambda rel: self._put(src, rel, storage_id), files):
                added.files[rel] = entry
        existing = self._read_manifest(storage_id)
        self._write_manifest(storage_id, existing.merged(added) if existing else added)
        self._remove_marker(storage_id)

    def _remove_marker(self, storage_id: str) -> None:
        marker = self._marker(storage_id)
        with contextlib.suppress(CheckpointNotFound):
            self._call("delete", marker, lambda: self.fs.rm_file(marker))

    def upload_files(self, files: list[tuple[Path, str]], prefix: str) -> None:
        """Upload the files in parallel, each to ``<root>/<prefix>/<dest>`` (no manifest: they
        belong to no checkpoint)."""
        base = "/".join(p for p in (self.backend.root, check_relative(prefix, "prefix")) if p)

        def put(item: tuple[Path, str]) -> None:
            path, dest = item
            key = f"{base}/{check_relative(dest, 'destination')}"
            self._call("write", key, lambda: self.fs.put_file(str(path), key, **self._put_kw()))

        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(files)))) as pool:
            list(pool.map(put, files))

    @contextlib.contextmanager
    def store_path(self, storage_id: str) -> Iterator[Path]:
        tmp = Path(tempfile.mkdtemp(prefix=f"tk-ckpt-{check_storage_id(storage_id)[:8]}-"))
        try:
            yield tmp
            self.upload(tmp, storage_id, list(list_directory(tmp)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    # -- reading ------------------------------------------------------------------------

    def _manifest(self, storage_id: str) -> Manifest:
        manifest = self._read_manifest(storage_id)
        if manifest is None:
            raise CheckpointNotFound(
                f"checkpoint {storage_id} not found in {self.location} (no manifest: absent, "
                "or its upload never finished)"
            )
        return manifest

    def list_files(self, storage_id: str) -> dict[str, int]:
        return self._manifest(storage_id).resources()

    def download(
        self, storage_id: str, dst: str | os.PathLike[str], selector: Selector | None = None
    ) -> None:
        """Download the selected files in parallel, each checked against the manifest."""
        manifest = self._manifest(storage_id)
        dst = Path(dst)
        dst.mkdir(parents=True, exist_ok=True)
        for d in sorted(manifest.dirs):
            if selector is None or selector(d):
                (dst / d).mkdir(parents=True, exist_ok=True)
        wanted = [r for r in sorted(manifest.files) if selector is None or selector(r)]

        def get(rel: str) -> None:
            key = self._key(storage_id, rel)
            target = dst / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            self._call("read", key, lambda: self.fs.get_file(key, str(target)))
            verify(target, manifest.files[rel], self._url(key))

        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(wanted)))) as pool:
            list(pool.map(get, wanted))

    @contextlib.contextmanager
    def restore_path(self, storage_id: str, selector: Selector | None = None) -> Iterator[Path]:
        tmp = Path(tempfile.mkdtemp(prefix=f"tk-restore-{check_storage_id(storage_id)[:8]}-"))
        try:
            self.download(storage_id, tmp, selector)
            yield tmp
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def exists(self, storage_id: str) -> bool:
        key = self._key(storage_id, MANIFEST_NAME)
        return bool(self._call("list", key, lambda: self.fs.exists(key)))

    def stored_bytes(self, storage_id: str) -> int | None:
        """The objects under the checkpoint's key but the manifest (None: there are none)."""
        found = self._find(self._key(storage_id))
        manifest = self._key(storage_id, MANIFEST_NAME)
        if not found:
            return None
        return sum(int(v.get("size") or 0) for key, v in found.items() if key != manifest)

    # -- deleting -----------------------------------------------------------------------

    def delete(self, storage_id: str) -> None:
        """The manifest first (the checkpoint is gone at once), then its other objects."""
        manifest = self._key(storage_id, MANIFEST_NAME)
        with contextlib.suppress(CheckpointNotFound):
            self._call("delete", manifest, lambda: self.fs.rm_file(manifest))
        self._remove_objects(self._key(storage_id))
        self._remove_marker(storage_id)

    def delete_files(self, prefix: str) -> None:
        base = "/".join(p for p in (self.backend.root, check_relative(prefix, "prefix")) if p)
        self._remove_objects(base)

    def _remove_objects(self, prefix: str) -> None:
        keys = self._find(prefix)
        if keys:
            self._call("delete", prefix, lambda: self.fs.rm(sorted(keys)))

    def _find(self, prefix: str) -> dict[str, dict[str, Any]]:
        try:
            found = self._call("list", prefix, lambda: self.fs.find(prefix, detail=True))
        except CheckpointNotFound:
            return {}
        return {k: v for k, v in found.items() if v.get("type") != "directory"}

    def remove_stale_partials(self) -> list[Path]:
        """Delete what uploads that died left behind; return their storage ids. Lists the
        markers (PARTIALS) and, for a marker older than ``stale_age``, that storage
        id's objects: a checkpoint without a manifest whose newest object is that old too is
        deleted (one being written is kept); with a manifest, only the marker goes."""
        prefix = "/".join(p for p in (self.backend.root, PARTIALS) if p)
        now = time.time()
        removed = []
        for key, info in sorted(self._find(prefix).items()):
            storage_id = key[len(prefix) :].lstrip("/")
            if "/" in storage_id or now - _mtime(info) < self.stale_age:
                continue  # not a marker, or maybe still being written (unknown age: 0)
            objects = self._find(self._key(storage_id))
            if any(k.endswith(f"/{MANIFEST_NAME}") for k in objects):
                self._remove_marker(storage_id)  # the writer died just after the manifest
                continue
            if any(now - _mtime(i) < self.stale_age for i in objects.values()):
                continue  # a long upload still adding files
            keys = sorted(objects)
            if keys:
                with contextlib.suppress(CheckpointNotFound):
                    self._call("delete", key, functools.partial(self.fs.rm, keys))
            self._remove_marker(storage_id)
            removed.append(Path(storage_id))
        return removed

    def check_access(self) -> None:
        """Write, read and delete a probe object (as Determined does before a trial runs);
        few retries: an answer is wanted soon (e.g. at ``experiment create``)."""
        probe = self._key(f"VALIDATE-{os.getpid()}-{random.getrandbits(32):08x}", "VALIDATE.txt")
        self._call("write", probe, lambda: self.fs.pipe_file(probe, b"trialkit"), tries=2)
        self._call("read", probe, lambda: self.fs.cat_file(probe))
        self._call("delete", probe, lambda: self.fs.rm_file(probe))


def _mtime(info: dict[str, Any]) -> float:
    """An object's modification time from any backend's listing (0 when none is given)."""
    for name in ("LastModified", "last_modified", "updated", "mtime", "timeCreated"):
        value = info.get(name)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return 0.0
