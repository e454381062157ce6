"""The store's errors, and which database failures mean a full disk."""

from __future__ import annotations

#: SQLite's primary result code for a write that found no space (ENOSPC, or a quota).
_SQLITE_FULL = 13
#: PostgreSQL's SQLSTATE disk_full.
_PG_DISK_FULL = "53100"


class StoreError(RuntimeError):
    """The database could not do what was asked (locked, unreachable, corrupt)."""


class StoreFull(StoreError):
    """A write failed because the disk under the database is full: freeing space fixes it."""


class StoreUnavailable(StoreError):
    """The database server was unreachable (down, restarting, the connection dropped).
    ``in_doubt``: the operation's commit got no answer, so it may have been stored."""

    def __init__(self, message: str, *, in_doubt: bool = False) -> None:
        super().__init__(message)
        self.in_doubt = in_doubt


class NotFound(LookupError):
    """No such experiment, trial or checkpoint."""


def driver_reason(e: BaseException) -> str:
    """One line saying what the database driver said (without SQLAlchemy's SQL echo and links)."""
    orig = getattr(e, "orig", None) or e
    return f"{type(orig).__name__}: {' '.join(str(orig).split())}"


def is_disk_full(e: BaseException) -> bool:
    """Whether a driver's error (or SQLAlchemy's wrapping of one) says the disk is full."""
    orig = getattr(e, "orig", None) or e
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF == _SQLITE_FULL:
        return True
    return getattr(orig, "sqlstate", None) == _PG_DISK_FULL or "disk is full" in str(orig)


def full_or_failed(e: BaseException) -> StoreError:
    """The store's error for a failed database call: ``StoreFull`` when the disk is full."""
    cls = StoreFull if is_disk_full(e) else StoreError
    return cls(f"store error: {driver_reason(e)}")
