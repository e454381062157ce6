"""CheckpointContext: save, register, find and restore checkpoints.

A checkpoint is registered with the master only after its files and ``metadata.json`` are in
place, so the latest checkpoint a restarted trial gets is always complete.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import logging
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..contract import trial_journal_dir, write_entry
from ..errors import APIError, MasterUnavailable
from ..storage import StorageManager, list_directory
from ._backend import TrialBackend
from ._distributed import DistributedContext

logger = logging.getLogger("trialkit.core")


class DownloadMode(enum.Enum):
    """Whether the workers on a node share one download (the local chief's) or each download.

    Decision: trialkit accepts both and checks the value, but every caller downloads (or
    restores) for itself in both modes: the result is the same files, at the cost of one
    transfer per local worker with LocalWorkersShareDownload. Sharing would make every local
    worker call in step with one directory, which trialkit's harnesses do not all do (the
    Lightning callback downloads into a directory per rank)."""

    LocalWorkersShareDownload = "LOCAL_WORKERS_SHARE_DOWNLOAD"
    NoSharedDownload = "NO_SHARED_DOWNLOAD"


def check_download_mode(mode: DownloadMode | str) -> DownloadMode:
    """``mode`` as a DownloadMode (its value is accepted too); ValueError naming the choices."""
    try:
        return DownloadMode(mode)
    except ValueError:
        choices = ", ".join(f"DownloadMode.{m.name}" for m in DownloadMode)
        raise ValueError(f"download_mode {mode!r} is not one of {choices}") from None


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


def _md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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
        after_report: Callable[[], None] | None = None,
    ) -> None:
        self._after_report = after_report  # AUTO mode's TensorBoard sync
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
        record = {
            "uuid": storage_id,
            "steps_completed": int(metadata["steps_completed"]),
            "metadata": metadata,
            "resources": resources,
            "storage": self._storage_config,
        }
        try:
            self._backend.report_checkpoint(record)
        except MasterUnavailable as e:
            journaled = self._journal_unregistered(record, e)
            if journaled is e:
                raise
            raise journaled from None  # its message carries the connection error
        except APIError as e:
            if e.status not in (403, 409):
                raise
            raise self._refused(storage_id, e) from None
        logger.info("saved checkpoint %s", storage_id)
        if self._after_report is not None:
            self._after_report()

    def _refused(self, storage_id: str, error: APIError) -> APIError:
        """The master refused the checkpoint (this run was replaced, the trial ended, or the
        storage is not its experiment's): it will never be registered, so its files are
        deleted; the one-line error to raise."""
        try:
            self._storage.delete(storage_id)
            fate = "its files were deleted"
        except Exception as e:  # any storage backend's error: the refusal is what to report
            fate = f"its files could not be deleted ({e})"
        return APIError(
            error.status, f"checkpoint {storage_id} was not registered: {error}; {fate}"
        )

    def _journal_unregistered(
        self, record: dict[str, Any], error: MasterUnavailable
    ) -> MasterUnavailable:
        """Keep the report of a checkpoint the master could not be told about in the trial's
        journal, for the master to register when it is back; the error to raise."""
        directory = trial_journal_dir()
        uuid_ = record["uuid"]
        if directory is None:
            return error
        backend = self._backend
        entry = {**record, "trial_id": backend.trial_id, "run_id": backend.run_id}
        try:
            path = write_entry(directory, entry)
        except OSError as e:
            return MasterUnavailable(
                f"checkpoint {uuid_} is saved but could not be registered ({error}) nor "
                f"journaled for later registration ({e})"
            )
        return MasterUnavailable(
            f"checkpoint {uuid_} is saved but the master could not be reached to register it "
            f"({error}); it will be registered when the master is back (journal: {path})"
        )

    def upload(
        self,
        ckpt_dir: str | os.PathLike[str] | None,
        metadata: dict[str, Any] | None = None,
        *,
        shard: bool = False,
        selector: Callable[[str], bool] | None = None,
    ) -> str:
        """Copy ``ckpt_dir`` into storage under a new storage id, register it, return the id.

        A symlink in ``ckpt_dir`` that dangles or leads outside it, or a special file, raises
        CheckpointContentError naming it, before anything is stored (a link to a file inside
        the directory is stored as that file)."""
        self._require_chief("upload", shard)
        if ckpt_dir is None and not shard:
            raise RuntimeError("upload(): ckpt_dir is required when shard=False")
        if selector is not None and ckpt_dir is None:
            raise RuntimeError("upload(): a selector needs a ckpt_dir")
        metadata = dict(metadata or {})
        if self._dist.rank == 0:
            self._steps_completed(metadata)
        storage_id = self._new_storage_id(shard)
        if not shard:
            assert ckpt_dir is not None
            src = Path(ckpt_dir)
            paths = [p for p in list_directory(src) if selector is None or selector(p)]
            (src / "metadata.json").write_text(json.dumps(metadata, indent=2))
            self._storage.upload(src, storage_id, sorted({*paths, "metadata.json"}))
            self._publish(storage_id, metadata)
            return storage_id
        merged = merge_metadata(self._dist.allgather(metadata))
        shard_dir = Path(ckpt_dir) if ckpt_dir is not None else None
        self._upload_shards(storage_id, shard_dir, selector, merged)
        self._publish(storage_id, merged)
        return storage_id

    def _upload_shards(
        self,
        storage_id: str,
        src: Path | None,
        selector: Callable[[str], bool] | None,
        merged: dict[str, Any],
    ) -> None:
        """Every rank's files into one checkpoint: a directory shared by several ranks (same
        host, device and inode) is uploaded once, by its lowest rank; a file two ranks both
        have must be identical, else it is an error. Ranks upload one after another."""
        ident = None
        files: dict[str, int] = {}
        if src is not None:
            st = src.stat()
            ident = (socket.gethostname(), st.st_dev, st.st_ino)
            files = {
                p: n for p, n in list_directory(src).items() if selector is None or selector(p)
            }
        everyone = self._dist.allgather((ident, files, selector is not None))
        if all(i is None for i, _, _ in everyone):
            raise RuntimeError(
                "upload(shard=True): every worker passed ckpt_dir=None; nothing to upload"
            )
        mine: list[str] = []
        if src is not None and not any(
            i == ident and not sel and selector is None for i, _, sel in everyone[: self._dist.rank]
        ):
            mine = sorted(files)
        owners = self._dist.allgather(mine)
        mine = self._resolve_conflicts(src, owners)
        if self._dist.rank == 0 and src is not None:
            (src / "metadata.json").write_text(json.dumps(merged, indent=2))
            mine = sorted({*mine, "metadata.json"})
        elif self._dist.rank == 0:
            tmp = Path(tempfile.mkdtemp(prefix="tk-meta-"))
            (tmp / "metadata.json").write_text(json.dumps(merged, indent=2))
            self._storage.upload(tmp, storage_id, ["metadata.json"])
            shutil.rmtree(tmp, ignore_errors=True)
        for turn in range(self._dist.size):
            if turn == self._dist.rank and src is not None and mine:
                self._storage.upload(src, storage_id, mine)
            self._dist.allgather(None)

    def _resolve_conflicts(self, src: Path | None, owners: list[list[str]]) -> list[str]:
        """Files several ranks would upload: identical → only the lowest rank; else an error."""
        first: dict[str, int] = {}
        shared: set[str] = set()
        for rank, paths in enumerate(owners):
            for p in paths:
                if p in first:
                    shared.add(p)
                else:
                    first[p] = rank
        mine = list(owners[self._dist.rank])
        if not shared:
            return mine
        digests = {}
        for p in sorted(shared & set(mine)):
            assert src is not None
            digests[p] = "dir" if p.endswith("/") else _md5(src / p)
        every = self._dist.allgather(digests)
        clashes = sorted(p for p in shared if len({d[p] for d in every if p in d}) > 1)
        if clashes:
            detail = ", ".join(
                f"{p} (ranks {[r for r, d in enumerate(every) if p in d]})" for p in clashes
            )
            raise RuntimeError(f"refusing to upload with files conflicts: {detail}")
        return [p for p in mine if first[p] == self._dist.rank]

    def _publish(self, storage_id: str, metadata: dict[str, Any]) -> None:
        if self._dist.rank == 0:
            self._report(storage_id, metadata, self._storage.list_files(storage_id))

    @contextlib.contextmanager
    def store_path(
        self, metadata: dict[str, Any] | None = None, *, shard: bool = False
    ) -> Iterator[tuple[Path, str]]:
        """Yield (directory, storage_id) to save into; on exit the checkpoint is published.

        With ``shard=True`` every rank gets its own directory; on exit all ranks' files are
        gathered into the one checkpoint (see ``upload(shard=True)``).

        QUIRK decision: on shared_fs Determined hands every rank the same final directory. We
        stage each rank's files in its own temporary directory and merge them, so two ranks
        writing one path with different contents is an error instead of a silent last writer
        wins, and the code is the same for every storage type; the price is one copy of the
        files (staged under ``$TMPDIR``).

        A symlink left in the directory that dangles or leads outside it raises
        CheckpointContentError naming it, and nothing is published or registered."""
        self._require_chief("store_path", shard)
        metadata = dict(metadata or {})
        if self._dist.rank == 0:
            self._steps_completed(metadata)
        storage_id = self._new_storage_id(shard)
        if shard:
            tmp = Path(tempfile.mkdtemp(prefix=f"tk-shard-{storage_id[:8]}-r{self._dist.rank}-"))
            try:
                yield tmp, storage_id
                merged = merge_metadata(self._dist.allgather(metadata))
                self._upload_shards(storage_id, tmp, None, merged)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            self._publish(storage_id, merged)
            return
        with self._storage.store_path(storage_id) as path:
            yield path, storage_id
            (path / "metadata.json").write_text(json.dumps(metadata, indent=2))
        self._publish(storage_id, metadata)

    @contextlib.contextmanager
    def restore_path(
        self,
        storage_id: str,
        download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
        *,
        selector: Callable[[str], bool] | None = None,
    ) -> Iterator[Path]:
        """Yield a local directory with the checkpoint's files (see DownloadMode)."""
        check_download_mode(download_mode)
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
        """Copy the checkpoint into ``ckpt_dir`` (created if missing; see DownloadMode)."""
        check_download_mode(download_mode)
        self._storage.download(storage_id, ckpt_dir, selector)

    def get_metadata(self, storage_id: str) -> dict[str, Any]:
        """The checkpoint's metadata (from the master, else its metadata.json)."""
        found = self._backend.checkpoint_metadata(storage_id)
        if found is not None:
            return found
        with self._storage.restore_path(storage_id) as path:
            return json.loads((path / "metadata.json").read_text())  # type: ignore[no-any-return]

    def delete(self, storage_id: str) -> None:
        """Mark the checkpoint deleted, then delete its files (the master may refuse: a
        warm start uses it; then the files stay)."""
        self._backend.delete_checkpoint(storage_id)
        self._storage.delete(storage_id)
