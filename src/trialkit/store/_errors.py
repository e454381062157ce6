"""The store's errors."""

from __future__ import annotations


class StoreError(RuntimeError):
    """The database could not do what was asked (locked, unreachable, corrupt)."""


class NotFound(LookupError):
    """No such experiment, trial or checkpoint."""
