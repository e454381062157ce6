"""The store's errors."""

from __future__ import annotations


class StoreError(RuntimeError):
    """The database could not do what was asked (locked, unreachable, corrupt)."""


class StoreUnavailable(StoreError):
    """The database server was unreachable (down, restarting, the connection dropped).
    ``in_doubt``: the operation's commit got no answer, so it may have been stored."""

    def __init__(self, message: str, *, in_doubt: bool = False) -> None:
        super().__init__(message)
        self.in_doubt = in_doubt


class NotFound(LookupError):
    """No such experiment, trial or checkpoint."""
