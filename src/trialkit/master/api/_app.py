"""The master's FastAPI application: its services, the routers of its resources, the token
check (``_auth.TokenAuth``, before routing; see docs/security.md) and its error handlers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.middleware.gzip import GZipMiddleware

from ... import __version__
from ...store import NotFound, Store
from ..engine._engine import Engine
from ..ingest._group_commit import MetricIngest
from . import (
    _checkpoints,
    _experiment_edit,
    _experiments,
    _gc,
    _importance,
    _logs,
    _master,
    _metrics,
    _searcher,
    _trials,
    _ui,
)
from ._auth import TokenAuth
from ._errors import UnexpectedErrors, full_disk_message
from ._preemption import PreemptionWaits
from ._schemas import field_errors
from ._services import Services
from ._ui_session import UiSessions

#: In this order: a request is routed (and TokenAuth finds its route) by the first that matches;
#: the UI's pages are mounted at /ui after all of them.
_ROUTERS = (
    _master.router,
    _experiments.router,
    _experiment_edit.router,
    _searcher.router,
    _trials.router,
    _metrics.router,
    _checkpoints.router,
    _gc.router,
    _logs.router,
    _importance.router,
    _ui.router,
)


def create_app(
    store: Store,
    engine: Engine,
    token: str,
    on_shutdown: Callable[[], None] | None = None,
    *,
    trial_key: str | None = None,
    idle_timeout: float = 0.0,
) -> FastAPI:
    """The FastAPI application for one master: ``token`` is the admin token; trial tokens
    derived from ``trial_key`` (none accepted without one) report for their own trial only."""
    services = _services(store, engine, token, on_shutdown, idle_timeout)
    # No /docs or /redoc: a browser page cannot send the token. The spec is at /openapi.json
    # (token needed) and app.openapi() in-process.
    app = FastAPI(title="trialkit master", version=__version__, docs_url=None, redoc_url=None)
    app.state.services = services
    for router in _ROUTERS:
        # Its routes themselves (their router's token dependency is in each), not FastAPI's
        # lazy include_router: the app's route list stays flat, as TokenAuth reads it to find a
        # request's route template, and routing a request walks no nested routers.
        app.router.routes.extend(router.routes)
    app.mount("/ui", _ui.pages(), name="ui")
    app.add_exception_handler(NotFound, _not_found)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_middleware(
        TokenAuth,
        router=app.router,
        admin_token=token,
        trial_key=trial_key,
        checkpoint_trial=lambda uuid: _checkpoints.checkpoint_trial(store, uuid),
        ui_sessions=services.ui_sessions,
    )
    # Each added around the ones before: errors around TokenAuth, gzip outermost.
    app.add_middleware(UnexpectedErrors, full_disk=services.full_disk)
    # Large replies (a chart's 200,000 points: 5 MB of JSON) gzipped for a browser at the end
    # of an ssh tunnel; level 1 costs ~30 ms for 5 MB. Starlette never gzips event streams.
    app.add_middleware(GZipMiddleware, minimum_size=_ui.GZIP_MIN_BYTES, compresslevel=1)
    return app


def _services(
    store: Store,
    engine: Engine,
    token: str,
    on_shutdown: Callable[[], None] | None,
    idle_timeout: float,
) -> Services:
    stopping = threading.Event()
    return Services(
        store=store,
        engine=engine,
        ui_sessions=UiSessions(token),
        stopping=stopping,
        started=time.time(),
        idle_timeout=idle_timeout,
        on_shutdown=on_shutdown,
        preemptions=PreemptionWaits(engine.should_preempt, stopping.is_set),
        ingest=MetricIngest(store),
        full_disk=full_disk_message(store.url, engine.settings.home),
    )


async def _not_found(_: Request, exc: Exception) -> Response:
    """A missing row: 404 naming it."""
    return JSONResponse(status_code=404, content={"detail": str(exc)})


async def _invalid_request(_: Request, exc: Exception) -> Response:
    """A request that does not validate: 422 listing every field that is wrong."""
    assert isinstance(exc, RequestValidationError)
    return JSONResponse(status_code=422, content={"detail": {"errors": field_errors(exc)}})
