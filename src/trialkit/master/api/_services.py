"""What every route depends on: the master's services (store, engine, browser sessions, ...)
kept in the app's state and reached through ``Depends``, and the token check as a typed
dependency (``TokenAuth`` checked the token before routing; this makes every route say so)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, cast

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import HTTPConnection

from ...store import Store, Trial
from ..engine._engine import Engine
from ..ingest._group_commit import MetricIngest
from ._auth import Principal
from ._preemption import PreemptionWaits
from ._ui_session import UiSessions


@dataclass(frozen=True)
class Services:
    """One master's services, built once by ``create_app`` and shared by its routes."""

    store: Store
    engine: Engine
    ui_sessions: UiSessions
    #: Set once a shutdown is asked for: long polls then answer at once, so the server is not
    #: left waiting for them (their clients simply ask the next master).
    stopping: threading.Event
    #: When the app was built (time.time()), for the master's uptime.
    started: float
    idle_timeout: float
    on_shutdown: Callable[[], None] | None
    preemptions: PreemptionWaits
    ingest: MetricIngest
    #: The line a client gets when the store's disk is full.
    full_disk: str

    def trial(self, trial_id: int) -> Trial:
        """The trial (NotFound, a 404, when there is none)."""
        return self.store.get_trial(trial_id)


async def get_services(connection: HTTPConnection) -> Services:
    """The app's services (async: a sync dependency would cost a thread hop per request)."""
    return cast(Services, connection.app.state.services)


#: A route parameter holding the master's services.
Svc = Annotated[Services, Depends(get_services)]

_BEARER = HTTPBearer(auto_error=False, description="the master token or a trial's own token")


async def authorized(
    request: Request,
    # Declares the bearer scheme in the OpenAPI spec; TokenAuth already checked the token.
    _: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)] = None,
) -> Principal:
    """Who sent the request, as TokenAuth found it; 401 when it let nobody through."""
    principal = request.scope.get("state", {}).get("principal")
    if principal is None:
        raise HTTPException(401, "missing or wrong token")
    return cast(Principal, principal)


#: The dependencies of a route that needs a token (every route but a few of the web UI's).
AUTH = [Depends(authorized)]
#: A route parameter holding who sent the request.
Caller = Annotated[Principal, Depends(authorized)]
