"""CheckpointContext: save, register, find and restore checkpoints.

A checkpoint is registered with the master only after its files and ``metadata.json`` are in
place, so the latest checkpoint a restarted trial gets is always complete.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..storage import StorageManager, list_directory
from ._backend import TrialBackend
from ._distributed import DistributedContext

logger = logging.getLogger("trialkit.core")


class DownloadMode(enum.Enum):
    """Whether the workers on a node share one download (the local chief's) or each download."""

    LocalWorkersShareDownload = "LOCAL_WORKERS_SHARE_DOWNLOAD"
    NoSharedDownload = "NO_SHARED_DOWNLOAD"


def _self_and_parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(len(parts), 1, -1)]


def merge_metadata(dicts: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge per-rank metadata in rank order; equal leaves are fine, different ones conflict."""
    conflicts: dict[str, list[int]] = {}
    supplier: dict[str, int] = {}

    def merge(into: dict[str, Any], new: dict[str, Any], rank: int, path: str) -> None:
        for key, value in new.items():
            where = f"{path}/{key}"
            if key not in into:
                into[key] = value
                supplier[where] = rank
            elif isinstance(into[key], dict) and isinstance(value, dict):
                merge(into[key], value, rank, where)
            elif into[key] != value:
                first = next(supplier[p] for p in _self_and_parents(where) if p in supplier)
                conflicts.setdefault(where, [first]).append(rank)

    out: dict[str, Any] = {}
    for rank, d in enumerate(dicts):
        merge(out, d or {}, rank, "")
    if conflicts:
        detail = "; ".join(f"{p} (ranks {r})" for p, r in sorted(conflicts.items()))
        raise RuntimeError(f"refusing to upload with metadata conflicts: {detail}")
    return out


class CheckpointContext:
    """Checkpoint storage plus registration with the master."""

    def __init__(
        self,
        dist: DistributedContext,
        storage: StorageManager,
        storage_config: dict[str, Any],
        backend: TrialBackend,
        *,
        require_steps: bool = True,
    ) -> None:
        self._dist = dist
        self._storage = storage
        self._storage_config = storage_config
        self._backend = backend
        self._require_steps = require_steps

    def _steps_completed(self, metadata: dict[str, Any]) -> int:
        """The checkpoint's steps_completed (seed 000's ``latest_batch`` is accepted too)."""
        for key in ("steps_completed", "latest_batch"):
            if key in metadata:
                metadata.setdefault("steps_completed", metadata[key])
                return int(metadata[key])
        if self._require_steps:
            raise ValueError(
                "checkpoint metadata needs a 'steps_completed' item (how far training got), e.g. "
                "store_path({'steps_completed': steps})"
            )
        logger.warning("checkpoint metadata has no 'steps_completed'; recording 0")
        metadata["steps_completed"] = 0
        return 0

    def _new_storage_id(self, shard: bool) -> str:
        storage_id = str(uuid.uuid4()) if self._dist.rank == 0 else None
        return str(self._dist.broadcast(storage_id) if shard else storage_id)

    def _require_chief(self, call: str, shard: bool) -> None:
        if not shard and self._dist.rank != 0:
            raise RuntimeError(f"cannot call .{call}(shard=False) from a non-chief worker")

    def _report(self, storage_id: str, metadata: dict[str, Any], resources: dict[str, int]) -> None:
        self._backend.report_checkpoint(
            {
                "uuid": storage_id,
                "steps_completed": int(metadata["steps_completed"]),
                "metadata": metadata,
                "resources": resources,
                "storage": self._storage_config,
            }
        )
        logger.info("saved checkpoint %s", storage_id)

    def upload(
        self,
        ckpt_dir: str | os.PathLike[str] | None,
        metadata: dict[str, Any] | None = None,
        *,
        shard: bool = False,
        selector: Callable[[str], bool] | None = None,
    ) -> str:
        """Copy ``ckpt_dir`` into storage under a new storage id, register it, return the id."""
        self._require_chief("upload", shard)
        if ckpt_dir is None and not shard:
            raise RuntimeError("upload(): ckpt_dir is required when shard=False")
        metadata = dict(metadata or {})
        if self._dist.rank == 0:
            self._steps_completed(metadata)
        storage_id = self._new_storage_id(shard)
        merged = merge_metadata(self._dist.allgather(metadata)) if shard else metadata
        if shard and not any(self._dist.allgather(ckpt_dir is not None)):
            raise RuntimeError(
                "upload(shard=True): every worker passed ckpt_dir=None; nothing to upload"
            )
        if ckpt_dir is not None:
            src = Path(ckpt_dir)
            paths = [p for p in list_directory(src) if selector is None or selector(p)]
            if self._dist.rank == 0:
                (src / "metadata.json").write_text(json.dumps(merged, indent=2))
                paths = sorted({*paths, "metadata.json"})
            self._storage.upload(src, storage_id, paths)
        if shard:
            self._dist.allgather(None)
        if self._dist.rank == 0:
            with self._storage.restore_path(storage_id) as stored:
                resources = list_directory(stored)
            self._report(storage_id, merged, resources)
        return storage_id

    @contextlib.contextmanager
    def store_path(
        self, metadata: dict[str, Any] | None = None, *, shard: bool = False
    ) -> Iterator[tuple[Path, str]]:
        """Yield (directory, storage_id) to save into; on exit the checkpoint is published."""
        self._require_chief("store_path", shard)
        metadata = dict(metadata or {})
        if self._dist.rank == 0:
            self._steps_completed(metadata)
        storage_id = self._new_storage_id(shard)
        with self._storage.store_path(storage_id) as path:
            yield path, storage_id
            merged = merge_metadata(self._dist.allgather(metadata)) if shard else metadata
            if self._dist.rank == 0:
                (path / "metadata.json").write_text(json.dumps(merged, indent=2))
                resources = list_directory(path)
        if self._dist.rank == 0:
            self._report(storage_id, merged, resources)

    @contextlib.contextmanager
    def restore_path(
        self,
        storage_id: str,
        download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
        *,
        selector: Callable[[str], bool] | None = None,
    ) -> Iterator[Path]:
        """Yield a local directory with the checkpoint's files."""
        with self._storage.restore_path(storage_id, selector) as path:
            yield path

    def download(
        self,
        storage_id: str,
        ckpt_dir: str | os.PathLike[str],
        download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
        *,
        selector: Callable[[str], bool] | None = None,
    ) -> None:
        """Copy the checkpoint into ``ckpt_dir`` (created if missing)."""
        self._storage.download(storage_id, ckpt_dir, selector)

    def get_metadata(self, storage_id: str) -> dict[str, Any]:
        """The checkpoint's metadata (from the master, else its metadata.json)."""
        found = self._backend.checkpoint_metadata(storage_id)
        if found is not None:
            return found
        with self._storage.restore_path(storage_id) as path:
            return json.loads((path / "metadata.json").read_text())  # type: ignore[no-any-return]

    def delete(self, storage_id: str) -> None:
        """Delete the checkpoint's files and mark it deleted."""
        self._storage.delete(storage_id)
        self._backend.delete_checkpoint(storage_id)
