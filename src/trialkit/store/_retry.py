"""The store's one retry policy: an operation the database server could not take because it was
unreachable (down, restarting, or it dropped the connection) is run again until the server is
back, for up to ``RECONNECT_WINDOW`` seconds. Only operations that wrote nothing are retried
(the server rolls back a transaction whose connection dies before its commit, and a read-only
one has nothing to lose) and those marked ``repeatable``; a commit that got no answer in an
operation that adds rows is left to its caller, as its outcome is unknown.

Without it a PostgreSQL restart failed every request and engine tick for its duration: trials
died on a refused checkpoint report and the engine could lose a trial's exit."""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.exc import DBAPIError

from ._errors import StoreError, StoreUnavailable, driver_reason, full_or_failed

logger = logging.getLogger(__name__)

#: Seconds an operation waits for an unreachable database server before it fails.
RECONNECT_WINDOW = 30.0
_FIRST_DELAY, _MAX_DELAY = 0.05, 1.0

F = TypeVar("F", bound=Callable[..., Any])
_nested = threading.local()  # an operation called by another retries as part of the outer one


def unreachable(error: BaseException, dbapi: Any) -> bool:
    """Whether ``error`` says the server could not be reached or dropped the connection:
    SQLAlchemy found the connection broken, or the driver failed to connect (PostgreSQL's
    SQLSTATE class 08, 57P01-57P03 while it shuts down or starts up, or none: no answer)."""
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    orig = getattr(error, "orig", None) or error
    if not isinstance(orig, dbapi.OperationalError):
        return False
    sqlstate = getattr(orig, "sqlstate", "")  # psycopg's; SQLite's errors have none
    return sqlstate is None or sqlstate.startswith(("08", "57P"))


def store_error(error: BaseException, dbapi: Any, *, in_doubt: bool) -> StoreError:
    """The StoreError for a failed operation: StoreUnavailable when the server was unreachable.
    ``in_doubt``: it may have written something (its commit got no answer)."""
    if unreachable(error, dbapi):
        return StoreUnavailable(f"store error: {driver_reason(error)}", in_doubt=in_doubt)
    return full_or_failed(error)


def repeatable(method: F) -> F:
    """Mark ``method`` as safe to run again after a commit that got no answer (it sets values,
    rather than adding rows): ``retried`` then retries it in doubt too."""
    method._store_repeatable = True  # type: ignore[attr-defined]
    return method


def retried(method: F) -> F:
    """``method`` run again while it fails with StoreUnavailable, up to RECONNECT_WINDOW."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if getattr(_nested, "active", False):
            return method(*args, **kwargs)
        _nested.active = True
        try:
            return _with_retries(method, getattr(method, "_store_repeatable", False), args, kwargs)
        finally:
            _nested.active = False

    return wrapper  # type: ignore[return-value]


def _with_retries(method: Callable[..., Any], repeat: bool, args: Any, kwargs: Any) -> Any:
    deadline = time.monotonic() + RECONNECT_WINDOW
    delay = _FIRST_DELAY
    failed = False
    while True:
        try:
            result = method(*args, **kwargs)
        except StoreUnavailable as e:
            if e.in_doubt and not repeat:
                raise
            if time.monotonic() + delay > deadline:
                message = f"{e} (still unreachable after {RECONNECT_WINDOW:g} s)"
                raise StoreUnavailable(message, in_doubt=e.in_doubt) from e
            if not failed:
                first_line = str(e).splitlines()[0]
                logger.warning(
                    "%s: database unreachable, retrying: %s", method.__name__, first_line
                )
            failed = True
            time.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)
            continue
        if failed:
            logger.info("%s: the database is reachable again", method.__name__)
        return result


def retry_public_methods(cls: type) -> type:
    """Apply ``retried`` to every public method of ``cls`` and its bases (one policy for the
    whole store, so a method added later gets it too)."""
    seen: set[str] = set()
    for klass in cls.__mro__[:-1]:
        for name, attr in vars(klass).items():
            if name in seen or name.startswith("_"):
                continue
            seen.add(name)
            if inspect.isfunction(attr):  # not the classmethods that open a store
                setattr(cls, name, retried(attr))
    return cls
