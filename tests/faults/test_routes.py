"""Route census: every route of the master's app, enumerated from ``create_app``, is called on a
real master without a token, with a wrong one, and with another trial's token (a WebSocket route
through its handshake); only OPEN_ROUTES answer without the admin token, and a trial token
reaches nothing but its own trial."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.routing import WebSocketRoute

from tests.integration._scripts import run_two_trials
from tests.integration.conftest import Master

pytestmark = pytest.mark.integration

#: What answers without a token (docs/security.md): a liveness probe and nothing else.
OPEN_ROUTES = {("GET", "/health")}
#: A WebSocket route's "method": it is called with a WebSocket handshake.
WEBSOCKET = "WEBSOCKET"
#: The web UI's login takes a one-time code instead of a token: 401 without a valid code,
#: whatever token comes with it (tests/e2e/test_webui_auth.py tests the code itself).
CODE_ROUTES = {("GET", "/ui/login")}


def app_routes(tmp_path: Path) -> list[tuple[str, str]]:
    """(method, path template) of every route of a real app, as ``create_app`` builds it."""
    from trialkit.master.api._app import create_app
    from trialkit.master.engine._engine import Engine, EngineSettings
    from trialkit.store import Store

    store = Store.at(tmp_path / "census-home")
    try:
        engine = Engine(
            store, EngineSettings(home=tmp_path, slots=1), "http://x", "k", tmp_path / "m"
        )
        app = create_app(store, engine, "census-token")
        found = set()
        for route in app.routes:
            path = str(getattr(route, "path", ""))
            if isinstance(route, WebSocketRoute):
                found.add((WEBSOCKET, path))
                continue
            for method in getattr(route, "methods", None) or {"GET"}:
                found.add((method, path))
        return sorted(found)
    finally:
        store.close()


@pytest.fixture
def finished(master: Master, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A completed experiment of two trials, each with a checkpoint and its own token."""
    exp, desc = run_two_trials(master, tmp_path)
    tokens = {
        t: json.loads((master.home / "trials" / str(t) / "cluster_info.json").read_text())[
            "session_token"
        ]
        for t in (1, 2)
    }
    ckpts = {c["trial_id"]: c["uuid"] for c in desc["checkpoints"]}
    yield {"experiment_id": exp, "tokens": tokens, "checkpoints": ckpts}


def _fill(template: str, trial_id: int, experiment_id: int, uuid: str) -> str:
    values = {"trial_id": trial_id, "experiment_id": experiment_id, "uuid": uuid}
    return re.sub(r"\{(\w+)(:\w+)?\}", lambda m: str(values.get(m[1], 1)), template)


def _status(master: Master, method: str, path: str, token: str | None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    if method == WEBSOCKET:
        return _handshake_status(master.client.url + path, headers)
    body = {} if method in ("POST", "PUT", "PATCH") else None
    resp = httpx.request(
        method, master.client.url + path, headers=headers, json=body, trust_env=False, timeout=30
    )
    return resp.status_code


def _handshake_status(url: str, headers: dict[str, str]) -> int:
    """The HTTP status a WebSocket handshake gets: 200 for an accepted one (101 Switching)."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    try:
        with connect("ws" + url.removeprefix("http"), additional_headers=headers, open_timeout=30):
            return 200
    except InvalidStatus as e:
        return e.response.status_code


def _trial_may_use(template: str) -> bool:
    """The routes a trial token opens, for its own trial, experiment and checkpoints only."""
    return template.startswith("/api/v1/trials/{trial_id}") or template in (
        "/api/v1/experiments/{experiment_id}/best_validation",
        "/api/v1/checkpoints/{uuid}",
    )


def test_every_route_needs_the_token_and_a_trial_token_stays_in_its_trial(
    master: Master, finished: dict[str, Any], tmp_path: Path
) -> None:
    routes = app_routes(tmp_path)
    assert len(routes) >= 30, routes  # the census found the app's routes
    exp_id = finished["experiment_id"]
    token1 = finished["tokens"][1]
    ckpt1, ckpt2 = finished["checkpoints"][1], finished["checkpoints"][2]
    open_routes, wrong = [], []

    # The shutdown route is called last, with the token, so the master answers the others.
    for method, template in sorted(routes, key=lambda r: r[1].endswith("/shutdown")):
        own = _fill(template, 1, exp_id, ckpt1)
        other = _fill(template, 2, exp_id + 1, ckpt2)
        if (method, template) in OPEN_ROUTES:
            assert _status(master, method, own, None) == 200
            continue
        if (method, template) in CODE_ROUTES:
            for token in (None, token1, master.client.token):
                assert _status(master, method, own + "?code=not-a-code", token) == 401
            continue
        for token in (None, "wrong", token1[:-4] + "0000", master.client.token + "x"):
            status = _status(master, method, own, token)
            if status != 401:
                open_routes.append(f"{method} {own} with {token!r}: {status}")
        status = _status(master, method, other, token1)
        if status != 403:
            wrong.append(f"{method} {other} with trial 1's token: {status}")
        if method in ("GET", WEBSOCKET) and _trial_may_use(template):
            status = _status(master, method, own, token1)
            if status != 200:
                wrong.append(f"{method} {own} with trial 1's own token: {status}")

    print(f"routes checked: {len(routes)}; open routes: {len(open_routes)}")
    assert open_routes == []
    assert wrong == []
    assert OPEN_ROUTES <= set(routes)  # the list of open routes is not stale
    # A path no route serves needs the token too: nothing tells a stranger what exists.
    assert _status(master, "GET", "/api/v1/nope", None) == 401
