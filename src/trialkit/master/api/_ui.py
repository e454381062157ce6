"""The web UI's routes: the login that trades a one-time code for a cookie, the static pages
(``trialkit/webui``), one metric of every trial for the experiment chart, and server-sent
events that tell an open page what changed."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import tarfile
import tempfile
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any

import psutil
from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from pydantic import TypeAdapter
from starlette.background import BackgroundTask
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from ... import storage as storage_lib
from ..._tensorboards import tensorboard_records
from ...rest import (
    ExperimentEvent,
    ExperimentMetrics,
    ExperimentRungs,
    ExperimentsEvent,
    LoginCode,
    MetricSeries,
    Ok,
    TensorboardList,
    TensorboardOut,
    routes,
)
from ...store import NotFound, Store
from ._auth import Principal
from ._schemas import CheckpointUuid, ExperimentId, QueryCount
from ._services import AUTH, Caller, Svc
from ._ui_session import CODE_TTL, COOKIE, SESSION_TTL
from ._views import experiment_rungs, searcher_of, view_cache

_METRICS_JSON = TypeAdapter(ExperimentMetrics)
WEBUI_DIR = Path(__file__).resolve().parents[2] / "webui"
LOGIN_PATH = "/ui/login"
#: Ends the browser's own session (the web UI's "Log out" button).
LOGOUT_PATH = "/ui/logout"
#: Seconds between the event stream's looks for a change, and between its keep-alive comments.
EVENT_POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0
#: Seconds after which an event stream reads the store although this master wrote nothing:
#: another process may have (a local-mode training script writes to the home's store).
EVENT_REFRESH_SECONDS = 15.0
#: Replies at least this long are gzipped when the client accepts it.
GZIP_MIN_BYTES = 64 * 1024

_BAD_CODE = (
    "<!doctype html><title>trialkit: login link not valid</title><h1>Login link not valid</h1>"
    "<p>This link was used already, has expired, or is wrong. Run <code>trialkit ui</code>"
    " for a new one.</p>"
)


router = APIRouter()


@router.post(routes.UI_LOGIN_CODE)
def login_code(caller: Caller, services: Svc) -> LoginCode:
    """A single-use login code for a browser (admin token only: a browser session cannot
    renew itself past its 12 hours)."""
    _token_only(caller, "a login code")
    return LoginCode(
        code=services.ui_sessions.new_code(), expires_in_seconds=CODE_TTL, login_path=LOGIN_PATH
    )


@router.post(routes.UI_REVOKE)
def revoke_sessions(caller: Caller, services: Svc) -> Ok:
    """End every browser session and unused login code (admin token only)."""
    _token_only(caller, "ending every browser session")
    services.ui_sessions.revoke_all()
    return Ok()


@router.post(LOGOUT_PATH, dependencies=AUTH, include_in_schema=False)
def logout(request: Request, services: Svc) -> Response:
    """End this browser's session: its cookie is refused from now on, and deleted."""
    services.ui_sessions.logout(request.cookies.get(COOKIE))
    response = Response(status_code=204)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


@router.get(LOGIN_PATH, include_in_schema=False)
def login(services: Svc, code: Annotated[str, Query(max_length=200)] = "") -> Response:
    cookie = services.ui_sessions.redeem(code)
    if cookie is None:
        return HTMLResponse(_BAD_CODE, status_code=401)
    # 303 to a URL without the code, so it is neither in the history nor a Referer.
    response = RedirectResponse("/ui/", status_code=303)
    response.set_cookie(
        COOKIE,
        cookie,
        max_age=int(SESSION_TTL),
        httponly=True,
        samesite="strict",
        path="/",
    )
    return response


@router.get("/", include_in_schema=False)
def root() -> Response:
    return RedirectResponse("/ui/", status_code=307)


@router.get(routes.EXPERIMENT_METRICS, dependencies=AUTH, response_model=ExperimentMetrics)
def experiment_metrics(
    experiment_id: ExperimentId,
    request: Request,
    services: Svc,
    group: Annotated[str, Query(max_length=64)] = "validation",
    metric: Annotated[str | None, Query(max_length=200)] = None,
    after_id: QueryCount = 0,
) -> Response:
    """One metric (default: the searcher's) of every trial, as a series per trial."""
    store = services.store
    exp = store.get_experiment(experiment_id)
    name = metric or searcher_of(exp)[0] or ""
    if after_id:  # a page's update: the few rows since its last look
        body = _metrics_json(store, experiment_id, group, name, after_id)
        return Response(body, media_type="application/json")
    # A page's first load: every point, the same until a metric row is added; kept
    # gzipped too, so a reload does not compress 5 MB again.
    reply = view_cache(store, "metrics").get(
        (experiment_id, group, name),
        store.last_metric_id(experiment_id),
        lambda: _Body(_metrics_json(store, experiment_id, group, name, 0)),
    )
    if "gzip" in request.headers.get("accept-encoding", "") and reply.gzipped:
        return Response(
            reply.gzipped,
            media_type="application/json",
            headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"},
        )
    return Response(reply.raw, media_type="application/json")


@router.get(routes.EXPERIMENT_RUNGS, dependencies=AUTH)
def searcher_rungs(experiment_id: ExperimentId, services: Svc) -> ExperimentRungs:
    """An ASHA search's rungs as its searcher holds them: per bracket, each rung's length,
    its trials with their metric and whether they were promoted or stopped, and the trials
    training towards it. No brackets for other searchers."""
    return experiment_rungs(services.store, experiment_id)


@router.get(routes.EXPERIMENT_EVENTS, dependencies=AUTH, response_model=ExperimentEvent)
async def experiment_events(
    experiment_id: ExperimentId, request: Request, services: Svc
) -> Response:
    """Server-sent events: one ``data:`` JSON line (an ExperimentEvent) each time the
    experiment's state, a trial's state or its metrics change."""
    store = services.store
    store.get_experiment(experiment_id)  # 404 before the stream starts
    return _event_response(
        lambda: _snapshot(store, experiment_id), lambda: store.changes, request, services.stopping
    )


@router.get(routes.EXPERIMENTS_EVENTS, dependencies=AUTH, response_model=ExperimentsEvent)
async def experiments_events(request: Request, services: Svc) -> Response:
    """Server-sent events: one ``data:`` JSON line (an ExperimentsEvent) each time an
    experiment is created or deleted, or one's state, progress, archived flag or metrics
    change."""
    store = services.store
    return _event_response(
        lambda: _list_snapshot(store), lambda: store.changes, request, services.stopping
    )


@router.get(routes.EXPERIMENT_TENSORBOARDS, dependencies=AUTH)
def tensorboards(experiment_id: ExperimentId, services: Svc) -> TensorboardList:
    """The running ``trialkit tensorboard`` servers that show this experiment."""
    services.store.get_experiment(experiment_id)
    home = services.engine.settings.home
    found = [tb for tb in running_tensorboards(home) if experiment_id in tb.experiment_ids]
    return TensorboardList(tensorboards=found)


@router.get(routes.CHECKPOINT_ARCHIVE, include_in_schema=False)
def download_checkpoint(uuid: CheckpointUuid, services: Svc) -> Response:
    """A checkpoint's files as a tar.gz, read from its experiment's configured storage
    (checked against its manifest: a damaged checkpoint is a 409 naming the file)."""
    store = services.store
    ckpt = store.get_checkpoint(uuid)
    config = store.config_with_secrets(ckpt.experiment_id).get("checkpoint_storage")
    if not config:
        return Response("the experiment has no checkpoint_storage", status_code=404)
    try:
        archive = _tar_checkpoint(storage_lib.build(config), ckpt.uuid)
    except storage_lib.CheckpointNotFound as e:
        return Response(str(e), status_code=404)
    except storage_lib.CheckpointIntegrityError as e:
        return Response(str(e), status_code=409)
    return FileResponse(
        archive,
        media_type="application/gzip",
        filename=f"{ckpt.uuid}.tar.gz",
        background=BackgroundTask(os.unlink, archive),
    )


def pages() -> StaticFiles:
    """The pages themselves (index.html at /ui/), behind the token or the cookie: mounted at
    /ui after every route (a mount answers every path under it)."""
    return _RevalidatedFiles(directory=WEBUI_DIR, html=True)


class _RevalidatedFiles(StaticFiles):
    """The UI's files with ``Cache-Control: no-cache``: the browser asks the master before each
    use (a 304 when unchanged), so a page is shown only while the master accepts the session.
    Without it, a browser logged out (or revoked) could still open the UI from its cache."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers["Cache-Control"] = "no-cache"
        return response


def _token_only(caller: Principal, what: str) -> None:
    """403 unless the request carries the master token (not a browser's session cookie)."""
    if caller.browser:
        raise HTTPException(
            403, f"{what} needs the master token, not a browser session: run 'trialkit ui'"
        )


class _Body:
    """A reply's JSON and, when it is long enough to be worth it, its gzip (level 1)."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.gzipped = gzip.compress(raw, compresslevel=1) if len(raw) >= GZIP_MIN_BYTES else b""


def _metrics_json(store: Store, experiment_id: int, group: str, name: str, after_id: int) -> bytes:
    """The ExperimentMetrics reply as JSON: ``name`` of the reports in ``group`` after row
    ``after_id``, a series per trial."""
    trials = store.metric_points(experiment_id, group, name, after_id) if name else []
    reply = ExperimentMetrics(
        group=group,
        metric=name,
        series=[MetricSeries(t.trial_id, t.steps, t.values) for t in trials],
        last_id=max((t.last_id for t in trials), default=after_id),
    )
    # Serialized by pydantic in one call: FastAPI's own path copies the dataclass with
    # dataclasses.asdict first, which for 200,000 points cost more than the query.
    return _METRICS_JSON.dump_json(reply)


def running_tensorboards(home: Path) -> list[TensorboardOut]:
    """What ``trialkit tensorboard`` commands still running recorded under the home."""
    found = []
    for path in sorted(tensorboard_records(home).glob("*.json")):
        try:
            record = json.loads(path.read_text())
            alive = psutil.pid_exists(int(record["pid"]))
            tb = TensorboardOut(
                url=str(record["url"]),
                experiment_ids=[int(e) for e in record["experiment_ids"]],
                trial_id=record.get("trial_id"),
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being written, or not ours
        if alive:
            found.append(tb)
    return found


def _tar_checkpoint(manager: storage_lib.StorageManager, uuid: str) -> str:
    """A temporary tar.gz of the checkpoint's files (the caller deletes it)."""
    fd, archive = tempfile.mkstemp(suffix=".tar.gz", prefix="trialkit-ckpt-")
    os.close(fd)
    try:
        _write_tar(manager, uuid, archive)
    except BaseException:
        os.unlink(archive)
        raise
    return archive


def _write_tar(manager: storage_lib.StorageManager, uuid: str, archive: str) -> None:
    with manager.restore_path(uuid) as path, tarfile.open(archive, "w:gz") as tar:
        manifest = f"{uuid}/{storage_lib.MANIFEST_NAME}"  # shared_fs keeps it in the directory
        tar.add(path, arcname=uuid, filter=lambda info: None if info.name == manifest else info)


def _snapshot(store: Store, experiment_id: int) -> ExperimentEvent:
    exp = store.get_experiment(experiment_id)
    trials = store.list_trials(experiment_id)
    return ExperimentEvent(
        experiment_id=exp.id,
        state=exp.state.value,
        progress=exp.progress,
        last_metric_id=store.last_metric_id(experiment_id),
        trials={str(t.id): t.state.value for t in trials},
    )


def _list_snapshot(store: Store) -> ExperimentsEvent:
    exps = store.list_experiments()
    return ExperimentsEvent(
        states={str(e.id): e.state.value for e in exps},
        progress={str(e.id): e.progress for e in exps},
        archived=[e.id for e in exps if e.archived],
        last_metric_id=store.newest_metric_id(),
    )


def _event_response(
    snapshot: Callable[[], Any],
    changes: Callable[[], int],
    request: Request,
    stopping: threading.Event,
) -> StreamingResponse:
    """A server-sent event stream of ``snapshot()`` each time it changes."""
    return StreamingResponse(
        _event_stream(snapshot, changes, request, stopping),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def _event_stream(
    snapshot: Callable[[], Any],
    changes: Callable[[], int],
    request: Request,
    stopping: threading.Event,
) -> AsyncIterator[str]:
    """Yield an event whenever the snapshot (a dataclass) changes, a keep-alive comment now
    and then; end when the snapshot's subject is gone (NotFound). The store is read only after
    a write (``changes()`` moved) or every EVENT_REFRESH_SECONDS: a hundred open pages of an
    idle master cost a comparison each per look, not a query."""
    yield "retry: 2000\n\n"
    last: Any = None
    seen: int | None = None  # changes() when the store was last read
    quiet = stale = 0.0
    while not stopping.is_set() and not await request.is_disconnected():
        if changes() != seen or stale >= EVENT_REFRESH_SECONDS:
            seen, stale = changes(), 0.0  # read before the snapshot: a write during it is seen
            try:
                now = await asyncio.to_thread(snapshot)
            except NotFound:
                return  # the experiment was deleted
            if now != last:
                last, quiet = now, 0.0
                yield f"data: {json.dumps(vars(now))}\n\n"
        if quiet >= KEEPALIVE_SECONDS:
            quiet = 0.0
            yield ": keep-alive\n\n"
        await asyncio.sleep(EVENT_POLL_SECONDS)
        quiet += EVENT_POLL_SECONDS
        stale += EVENT_POLL_SECONDS
