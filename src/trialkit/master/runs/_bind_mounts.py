"""``bind_mounts`` honoured without containers: each ``container_path`` becomes a symlink to its
``host_path``. A relative one lives in the trial's working copy (Determined's container working
directory); an absolute one is made where it names, when its parent is writable.

``read_only`` cannot be enforced by a symlink (that needs a mount namespace); it is documented,
not applied."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ...config import BindMount


class BindMountError(OSError):
    """A bind mount cannot be made; the message is one line naming the entry."""


def _is_link_to(path: Path, host: Path) -> bool:
    return path.is_symlink() and Path(os.readlink(path)) == host


def absolute_mount_problem(index: int, mount: BindMount) -> str | None:
    """Why an absolute ``container_path`` cannot be made on this machine (None: it can)."""
    target, host = Path(mount.container_path), Path(mount.host_path)
    if not target.is_absolute() or _is_link_to(target, host):
        return None
    where = f"bind_mounts[{index}].container_path: {target}"
    if target.exists() or target.is_symlink():
        return f"{where} already exists; trialkit links it to host_path and replaces nothing"
    if not target.parent.is_dir() or not os.access(target.parent, os.W_OK | os.X_OK):
        return (
            f"{where} cannot be made: its parent {target.parent} is not a writable directory "
            "(trials run without containers, so it becomes a symlink there); use a relative "
            "container_path"
        )
    return None


def bind_mount_errors(mounts: Sequence[BindMount]) -> list[str]:
    """One line per bind mount that cannot be made (checked when the experiment is created)."""
    errors = [absolute_mount_problem(i, m) for i, m in enumerate(mounts)]
    for i, m in enumerate(mounts):
        rel = Path(m.container_path)
        if not rel.is_absolute() and ".." in rel.parts:
            errors.append(
                f"bind_mounts[{i}].container_path: {m.container_path!r} leaves the trial's "
                "working directory; drop the '..'"
            )
    return [e for e in errors if e is not None]


def make_bind_mounts(mounts: Sequence[BindMount], workdir: Path) -> None:
    """Link every ``container_path`` (relative: inside ``workdir``) to its ``host_path``,
    creating ``host_path`` if missing, as Docker does for a bind mount's source."""
    for i, m in enumerate(mounts):
        host = Path(m.host_path)
        target = Path(m.container_path)
        target = target if target.is_absolute() else workdir / target
        try:
            host.mkdir(parents=True, exist_ok=True)
            if _is_link_to(target, host):
                continue
            if target.is_absolute() and not str(target).startswith(str(workdir)):
                problem = absolute_mount_problem(i, m)
                if problem:
                    raise BindMountError(problem)
            elif target.exists() or target.is_symlink():
                raise BindMountError(
                    f"bind_mounts[{i}].container_path: {m.container_path!r} is a file of the "
                    "model directory; rename one of them"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(host, target_is_directory=True)
        except BindMountError:
            raise
        except OSError as e:
            raise BindMountError(
                f"bind_mounts[{i}]: cannot link {target} to {host}: {e.strerror or e}"
            ) from None
