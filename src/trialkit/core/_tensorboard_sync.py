"""TensorBoard files into checkpoint storage: what ``upload_tensorboard_files`` does on request
(MANUAL), and AUTO mode's automatic sync of the chief's files after each metrics report, each
checkpoint and at close (Determined's points), uploading only the files that changed."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..storage import StorageManager

logger = logging.getLogger("trialkit.core")


def upload_tensorboard_dir(
    storage: StorageManager,
    root: Path,
    prefix: str,
    keep: Callable[[Path], bool] = lambda _: True,
    dest: Callable[[Path], Path] = lambda p: p,
) -> list[Path]:
    """Upload the files under ``root`` that ``keep`` selects (relative paths) to ``prefix``,
    each at ``dest(relative path)``; the relative paths uploaded."""
    chosen = [
        p.relative_to(root)
        for p in sorted(root.rglob("*"))
        if p.is_file() and keep(p.relative_to(root))
    ]
    storage.upload_files([(root / rel, dest(rel).as_posix()) for rel in chosen], prefix)
    return chosen


class TensorboardSync:
    """AUTO mode on the chief: upload the TensorBoard directory's new and changed files."""

    def __init__(self, storage: StorageManager, root: Path, prefix: str) -> None:
        self._storage = storage
        self._root = root
        self._prefix = prefix
        self._seen: dict[Path, tuple[int, int]] = {}  # relative path -> (mtime_ns, size)
        self._lock = threading.Lock()  # the shipping thread and a checkpoint may both sync

    def _changed(self, rel: Path) -> bool:
        st = (self._root / rel).stat()
        return self._seen.get(rel) != (st.st_mtime_ns, st.st_size)

    def sync(self, _reports: Any = None) -> None:
        """Upload what changed since the last sync; a failure is logged, not raised (training
        goes on, and the next sync tries again)."""
        with self._lock:
            self._sync()

    def _sync(self) -> None:
        if not self._root.is_dir():
            return
        stamps = {}
        try:
            for rel in upload_tensorboard_dir(
                self._storage, self._root, self._prefix, self._changed
            ):
                st = (self._root / rel).stat()
                stamps[rel] = (st.st_mtime_ns, st.st_size)
        except (OSError, RuntimeError) as e:
            logger.warning("TensorBoard files not uploaded to checkpoint storage: %s", e)
            return
        self._seen.update(stamps)
