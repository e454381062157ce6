"""The master's last line of defence: an unexpected error becomes one JSON line for the client
and one traceback in the master's log."""

from __future__ import annotations

import logging

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger("trialkit.master._app")


class UnexpectedErrors:
    """A bug, not bad input: one JSON line to the client and the traceback to the master's log,
    once. (Starlette's handler for Exception re-raises to the server, which logs it again.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

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
            logger.error("%s %s failed", scope.get("method"), scope.get("path"), exc_info=exc)
            if not started:  # else the client sees the response cut off: nothing more to send
                detail = f"internal error ({type(exc).__name__}); see the master log"
                await JSONResponse({"detail": detail}, status_code=500)(scope, receive, send)
