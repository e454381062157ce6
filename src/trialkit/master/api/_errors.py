"""The master's last line of defence: a failed store write becomes one clear line (507 for a
full disk, 503 otherwise) and an unexpected error one JSON line, each logged once."""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi.responses import JSONResponse
from sqlalchemy.engine import make_url
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...store import StoreError, StoreFull, StoreUnavailable

logger = logging.getLogger("trialkit.master.api._app")

#: HTTP 507 Insufficient Storage: the request was fine; the master had no room to keep it.
DISK_FULL_STATUS = 507
#: HTTP 503: the store failed for another reason (locked, unreachable); the request may be retried.
STORE_FAILED_STATUS = 503


def full_disk_message(store_url: str, home: Path) -> str:
    """What to tell a client whose write found the store's disk full: which disk, what to do."""
    url = make_url(store_url)
    if not url.drivername.startswith("sqlite"):
        return "the database server's disk is full: free space there and retry"
    if not url.database or url.database == ":memory:":
        return "the disk is full: free space and retry"
    database = Path(url.database).resolve()
    if database.is_relative_to(home.resolve()):
        return "the disk holding TRIALKIT_HOME is full: free space and retry"
    return f"the disk holding the store {database} is full: free space and retry"


def store_failure(exc: StoreError, full_disk: str) -> tuple[int, str]:
    """The HTTP status and the one line a client gets for a store that failed it."""
    if isinstance(exc, StoreFull):
        return DISK_FULL_STATUS, full_disk
    if isinstance(exc, StoreUnavailable):
        reason = str(exc).splitlines()[0]
        return STORE_FAILED_STATUS, f"the master's database is unreachable; try again: {reason}"
    return STORE_FAILED_STATUS, f"the store failed ({exc}); retry, and see the master log"


class UnexpectedErrors:
    """A store failure or a bug, not bad input: one JSON line to the client and the cause to the
    master's log, once (a traceback for a bug; Starlette's handler for Exception re-raises to
    the server, which would log it again). ``full_disk`` is the line for a full disk."""

    def __init__(self, app: ASGIApp, full_disk: str) -> None:
        self.app = app
        self.full_disk = full_disk

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            status, detail = self._reply(scope, exc)
            if not started:  # else the client sees the response cut off: nothing more to send
                await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)

    def _reply(self, scope: Scope, exc: Exception) -> tuple[int, str]:
        """Log ``exc`` once; the status and line for the client."""
        request = f"{scope.get('method')} {scope.get('path')}"
        if isinstance(exc, StoreError):  # the cause is the database's, not a bug: no traceback
            logger.error("%s failed: %s", request, exc)
            return store_failure(exc, self.full_disk)
        logger.error("%s failed", request, exc_info=exc)
        return 500, f"internal error ({type(exc).__name__}); see the master log"
