"""Ingest: the group commit that stores trials' metric batches in one writer thread, and the
journals of local-mode runs (``core.init()`` with no master), stored by the master too."""

from ._local_runs import LocalRunIngest

__all__ = ["LocalRunIngest"]
