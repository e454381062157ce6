"""Checkpoint storage managers: where checkpoint directories live and how they move."""

from __future__ import annotations

import abc
import contextlib
import errno
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from ._manifest import MANIFEST_NAME

Selector = Callable[[str], bool]

#: Where saves in progress are tracked, beside the checkpoints: shared_fs's partial
#: directories, an object store's partial markers. Finding leftovers of crashed writers lists
#: this only, never every checkpoint. (A storage id never starts with a dot.)
PARTIALS = ".trialkit-partials"


class CheckpointNotFound(FileNotFoundError):
    """The checkpoint directory is not in storage."""


class CheckpointContentError(ValueError):
    """A checkpoint holds something storage refuses: a symlink that dangles or leads outside
    the checkpoint directory, or a file that is not a regular file (a FIFO, a socket)."""


_STORAGE_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def tensorboard_prefix(experiment_id: int | None, trial_id: int | None = None) -> str:
    """Where TensorBoard files go in checkpoint storage: a trial's, or (``trial_id`` None) all
    of an experiment's, which ``experiment delete`` removes."""
    experiment = f"tensorboard/experiment-{experiment_id}"
    return experiment if trial_id is None else f"{experiment}/trial-{trial_id}"


def check_storage_id(storage_id: str) -> str:
    """``storage_id`` if it is one plain path component (a uuid); CheckpointNotFound if not."""
    if not _STORAGE_ID.fullmatch(storage_id) or ".." in storage_id:
        raise CheckpointNotFound(
            f"{storage_id!r} is not a checkpoint id (expected a name such as a uuid, "
            "without '/' or '..')"
        )
    return storage_id


def check_relative(rel: str, what: str) -> str:
    """``rel`` if it is a relative path that stays where it is joined; ValueError if not."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or "\\" in rel or ".." in parts or "" in parts[:-1]:
        raise ValueError(f"{what} {rel!r} must be a relative path without '..' or '//'")
    return rel


def inside(path: Path, root: Path) -> Path | None:
    """Where ``path`` leads (links followed) if that is inside ``root`` and exists, else None."""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # dangling, or a link loop
        return None
    real_root = root.resolve()
    return target if target == real_root or real_root in target.parents else None


def _entry_problem(path: Path, root: Path, is_dir: bool) -> str | None:
    """Why ``path`` cannot be part of the checkpoint rooted at ``root``, or None."""
    if path.is_symlink():
        target = inside(path, root)
        if target is None:
            return (
                f"{path}: a symlink to {os.readlink(path)!r}, which does not exist or is outside "
                "the checkpoint directory; copy the file in instead of linking it"
            )
        path = target
    mode = path.stat().st_mode
    if not (stat.S_ISDIR(mode) if is_dir else stat.S_ISREG(mode)):
        return f"{path}: not a regular file; a checkpoint holds regular files and directories"
    return None


class CheckpointStorageError(OSError):
    """A checkpoint could not be written: storage full, read-only or not writable."""

    __module__ = "trialkit.storage"  # its public name, shown in tracebacks


_WHAT_TO_DO = {
    errno.ENOSPC: "free space there",
    errno.EDQUOT: "free space there or raise your quota",
    errno.EFBIG: "raise the file size limit (ulimit -f) or save smaller files",
    errno.EROFS: "remount it read-write",
    errno.EACCES: "fix its permissions",
}


def _on_the_way(root: Path, path: Path) -> bool:
    """Whether ``path`` is ``root``, inside it, or one of the directories leading to it."""
    path = path.absolute()
    return path == root or root in path.parents or path in root.parents


def storage_error(root: Path, checkpoint: Path, e: BaseException) -> CheckpointStorageError | None:
    """The one-line error for ``e`` when it is the storage under ``root`` refusing a write of
    ``checkpoint`` (full, read-only, not writable), else None (e.g. a file elsewhere that the
    saving code could not read)."""
    if not isinstance(e, OSError) or e.errno not in _WHAT_TO_DO:
        return None
    named = [Path(os.fsdecode(f)) for f in (e.filename, e.filename2) if f is not None]
    if named and not any(_on_the_way(root, p) for p in named):
        return None
    return CheckpointStorageError(
        f"cannot save checkpoint {checkpoint}: {os.strerror(e.errno)} "
        f"({errno.errorcode[e.errno]}); {_WHAT_TO_DO[e.errno]}, or choose another "
        "checkpoint_storage.host_path"
    )


def list_directory(root: str | os.PathLike[str]) -> dict[str, int]:
    """Every file and directory under ``root`` as relpath -> size (dirs end with '/', size 0).

    A symlink that dangles or leads outside ``root``, or a special file, raises
    CheckpointContentError naming it: such a checkpoint is refused when it is saved (reading or
    copying it would crash, hang, or expose files that are not the checkpoint's). A link to a
    file inside the checkpoint counts as that file. The manifest (MANIFEST_NAME at the top) is
    not one of the checkpoint's files and is left out.
    """
    root = Path(root)
    out: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for name, is_dir in [*((d, True) for d in dirnames), *((f, False) for f in filenames)]:
            if not is_dir and name == MANIFEST_NAME and rel == Path("."):
                continue
            p = Path(dirpath) / name
            problem = _entry_problem(p, root, is_dir)
            if problem is not None:
                raise CheckpointContentError(problem)
            if is_dir:
                out[f"{(rel / name).as_posix()}/"] = 0
            else:
                out[(rel / name).as_posix()] = p.stat().st_size
    return dict(sorted(out.items()))


class StorageManager(abc.ABC):
    """Stores checkpoint directories under a random storage id."""

    @abc.abstractmethod
    def store_path(self, storage_id: str) -> contextlib.AbstractContextManager[Path]:
        """A directory to write a checkpoint into; it becomes visible only when the block exits."""

    @abc.abstractmethod
    def upload(self, src: str | os.PathLike[str], storage_id: str, paths: list[str]) -> None:
        """Copy the listed relative ``paths`` of ``src`` into checkpoint ``storage_id``."""

    @abc.abstractmethod
    def restore_path(
        self, storage_id: str, selector: Selector | None = None
    ) -> contextlib.AbstractContextManager[Path]:
        """A local directory holding the checkpoint for the duration of the block."""

    @abc.abstractmethod
    def download(
        self, storage_id: str, dst: str | os.PathLike[str], selector: Selector | None = None
    ) -> None:
        """Copy the checkpoint (the files ``selector`` accepts) into ``dst``."""

    @abc.abstractmethod
    def delete(self, storage_id: str) -> None:
        """Remove the checkpoint's files."""

    @abc.abstractmethod
    def exists(self, storage_id: str) -> bool:
        """Whether the checkpoint is in storage."""

    def stored_bytes(self, storage_id: str) -> int | None:
        """The bytes the checkpoint's files take in storage now (what deleting it frees, as
        ``list_files`` counts them: the manifest left out), or None when it is not there: a
        delete reports what it really removed."""
        if not self.exists(storage_id):
            return None
        return sum(self.list_files(storage_id).values())

    def remove_stale_partials(self) -> list[Path]:
        """Delete what writers that died mid-save left behind; return it (nothing by default)."""
        return []

    def delete_files(self, prefix: str) -> None:
        """Remove what ``upload_files`` put under ``<storage>/<prefix>`` (nothing by default:
        a manager that cannot store such files holds none)."""
        return None

    def upload_files(self, files: list[tuple[Path, str]], prefix: str) -> None:
        """Copy local files to ``<storage>/<prefix>/<dest>`` for each ``(file, dest)``: files
        that belong to no checkpoint (TensorBoard's). RuntimeError where storage has no room."""
        raise RuntimeError(f"{type(self).__name__} cannot store files outside checkpoints")

    def list_files(self, storage_id: str) -> dict[str, int]:
        """The checkpoint's files and directories as relpath -> size (dirs end with '/')."""
        with self.restore_path(storage_id) as path:
            return list_directory(path)

    @property
    def location(self) -> str:
        """Where the checkpoints are, for messages (a directory or an object-store URL)."""
        return type(self).__name__

    def check_access(self) -> None:
        """Raise CheckpointStorageError if checkpoints cannot be written and read there
        (a filesystem is checked when a checkpoint is saved: nothing to do here)."""
        return None
