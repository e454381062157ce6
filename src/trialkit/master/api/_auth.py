"""Who may call the master: the admin token (CLI, the user's scripts) or a per-trial token.

A trial token is ``trial.<trial id>.<experiment id>.<HMAC-SHA256(trial key, ...)>``: derived from
a key kept 0600 in the home, so it survives a master restart (an adopted trial keeps reporting)
without being stored anywhere. It authorises its own trial's routes and little else. The check
runs as ASGI middleware, before routing and body parsing: a request without a valid token gets
401 whatever its body, and a route added later needs the token unless listed in OPEN_PATHS.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Match, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from ..._home import PRIVATE_FILE, make_private
from ...rest import routes
from ._ui_session import COOKIE, UiSessions

#: The only routes that answer without a token (the UI's login trades a one-time code).
OPEN_PATHS = frozenset({"/health", "/ui/login"})

TRIAL_KEY_FILE = "trial.key"

_TRIAL_TOKEN = re.compile(r"trial\.([1-9][0-9]{0,17})\.([1-9][0-9]{0,17})\.([0-9a-f]{64})")


@dataclass(frozen=True)
class Principal:
    """Who sent a request: the admin (by the token, or a browser by its session cookie), or
    the trial a trial token was minted for."""

    trial_id: int | None = None
    experiment_id: int | None = None
    browser: bool = False

    @property
    def admin(self) -> bool:
        return self.trial_id is None


ADMIN = Principal()
BROWSER = Principal(browser=True)


def load_trial_key(home: Path) -> str:
    """The home's trial-token key, created (0600) on first use and kept across restarts."""
    path = home / TRIAL_KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        make_private(path)
        key = path.read_text().strip()
        if len(key) >= 32:
            return key
        path.unlink()  # empty or cut short by a crash while it was written: make a new one
        return load_trial_key(home)
    key = secrets.token_hex(32)
    with os.fdopen(fd, "w") as f:
        f.write(key)
    return key


def _signature(key: str, trial_id: int, experiment_id: int) -> str:
    msg = f"trial:{trial_id}:experiment:{experiment_id}".encode()
    return hmac.new(key.encode(), msg, hashlib.sha256).hexdigest()


def trial_token(key: str, trial_id: int, experiment_id: int) -> str:
    """The token that lets one trial report for itself, and nothing more."""
    return f"trial.{trial_id}.{experiment_id}.{_signature(key, trial_id, experiment_id)}"


def authenticate(header: str | None, admin_token: str, trial_key: str | None) -> Principal | None:
    """The principal an ``Authorization: Bearer ...`` header proves, or None."""
    if not header or not header.startswith("Bearer "):
        return None
    token = header[len("Bearer ") :]
    if secrets.compare_digest(token.encode(), admin_token.encode()):
        return ADMIN
    found = _TRIAL_TOKEN.fullmatch(token)
    if trial_key is None or found is None:
        return None
    trial_id, experiment_id = int(found[1]), int(found[2])
    expected = _signature(trial_key, trial_id, experiment_id)
    if not secrets.compare_digest(found[3].encode(), expected.encode()):
        return None
    return Principal(trial_id, experiment_id)


#: The header the web UI sends with every request that changes something.
UI_HEADER = "x-trialkit-ui"

_LOGIN_NEEDED = (
    "<!doctype html><title>trialkit: log in</title><h1>Not logged in</h1>"
    "<p>Run <code>trialkit ui</code> for a login link (it works once, for two minutes).</p>"
)

#: Route templates a trial token may use, and which path parameter must name its own ids.
_TRIAL_SCOPED = routes.TRIAL
_TRIAL_EXPERIMENT_ROUTES = frozenset({routes.BEST_VALIDATION})
_TRIAL_CHECKPOINT_ROUTES = frozenset({routes.CHECKPOINT})


class TokenAuth:
    """ASGI middleware: 401 without a valid token, 403 when a trial token leaves its trial."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        router: Router,
        admin_token: str,
        trial_key: str | None,
        checkpoint_trial: Callable[[str], int | None],
        ui_sessions: UiSessions | None = None,
    ) -> None:
        self.app = app
        self.ui_sessions = ui_sessions
        self.router = router
        self.admin_token = admin_token
        self.trial_key = trial_key
        self.checkpoint_trial = checkpoint_trial

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A WebSocket is authenticated at its handshake, refused with an HTTP answer like any
        # request (the ASGI websocket.http.response extension).
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization")
        principal = authenticate(header, self.admin_token, self.trial_key)
        if principal is None and self._browser_session(scope):
            principal = BROWSER  # the web UI's cookie stands for the admin token
        if principal is None:
            if not scope["path"].startswith("/api/"):
                await HTMLResponse(_LOGIN_NEEDED, status_code=401)(scope, receive, send)
                return
            response = JSONResponse(
                {"detail": "missing or wrong token"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        if not principal.admin:
            refusal = await self._trial_refusal(scope, principal)
            if refusal:
                await JSONResponse({"detail": refusal}, status_code=403)(scope, receive, send)
                return
        scope["state"] = {**scope.get("state", {}), "principal": principal}
        await self.app(scope, receive, send)

    def _browser_session(self, scope: Scope) -> bool:
        """Whether the request carries a valid web UI session cookie (and, unless it only
        reads, the UI's own header: SameSite does not tell ports apart, so another page on
        127.0.0.1 could send the cookie; a custom header needs a CORS preflight, never granted)."""
        if self.ui_sessions is None:
            return False
        headers = Headers(scope=scope)
        if scope.get("method") not in ("GET", "HEAD") and headers.get(UI_HEADER) != "1":
            return False
        return self.ui_sessions.valid(cookie_parser(headers.get("cookie", "")).get(COOKIE))

    async def _trial_refusal(self, scope: Scope, p: Principal) -> str | None:
        """Why a trial token may not make this request, or None when it may."""
        template, params = self._route_of(scope)
        own = f"trial {p.trial_id}'s token"
        if template == _TRIAL_SCOPED or template.startswith(_TRIAL_SCOPED + "/"):
            if params.get("trial_id") != str(p.trial_id):
                return f"{own} cannot act for trial {params.get('trial_id')}"
            return None
        if template in _TRIAL_EXPERIMENT_ROUTES:
            if params.get("experiment_id") != str(p.experiment_id):
                return f"{own} cannot read experiment {params.get('experiment_id')}"
            return None
        if template in _TRIAL_CHECKPOINT_ROUTES:
            owner = await asyncio.to_thread(self.checkpoint_trial, str(params.get("uuid")))
            if owner is not None and owner != p.trial_id:
                return f"{own} cannot use checkpoints of trial {owner}"
            return None  # its own, or none at all (the route answers 404)
        return f"{own} only reports for its trial; this route needs the master token"

    def _route_of(self, scope: Scope) -> tuple[str, dict[str, Any]]:
        """The template of the route that will serve the request and its raw path parameters."""
        for route in self.router.routes:
            match, child = route.matches(scope)
            if match == Match.FULL:
                return str(getattr(route, "path", "")), dict(child.get("path_params", {}))
        return "", {}
