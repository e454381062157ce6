"""The web UI's session ends: no self-renewal, logout, and ``trialkit ui --revoke``, on an
in-process master (real store, real auth middleware) through its HTTP interface."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import trialkit.client
from tests.inprocess_master import AUTH, TOKEN, InProcessMaster, inprocess_master, served
from trialkit.cli import cli
from trialkit.client import MasterClient

UI = {"X-Trialkit-UI": "1"}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        yield m


def _log_in(api: InProcessMaster) -> str:
    """A browser login as the CLI's link does it: the session cookie's value."""
    code = api.client.post("/api/v1/ui/login_code", headers=AUTH).json()["code"]
    api.client.cookies.clear()
    resp = api.client.get(f"/ui/login?code={code}", follow_redirects=False)
    assert resp.status_code == 303, resp.text
    return str(api.client.cookies["trialkit_session"])


def test_a_browser_session_cannot_renew_itself(api: InProcessMaster) -> None:
    _log_in(api)
    assert api.client.get("/api/v1/experiments").status_code == 200  # the cookie works
    renewal = api.client.post("/api/v1/ui/login_code", headers=UI)
    assert renewal.status_code == 403, renewal.text
    assert "master token" in renewal.json()["detail"]
    revoke = api.client.post("/api/v1/ui/revoke", headers=UI)
    assert revoke.status_code == 403


def test_logout_ends_the_session(api: InProcessMaster) -> None:
    cookie = _log_in(api)
    out = api.client.post("/ui/logout", headers=UI)
    assert out.status_code == 204, out.text
    assert 'trialkit_session=""' in out.headers["set-cookie"]  # the browser deletes it
    # The cookie kept by hand is refused from now on.
    api.client.cookies.clear()
    api.client.cookies.set("trialkit_session", cookie)
    assert api.client.get("/api/v1/experiments").status_code == 401
    assert api.client.get("/ui/").status_code == 401


def test_revoke_ends_every_session(api: InProcessMaster, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = _log_in(api), _log_in(api)
    unused = api.client.post("/api/v1/ui/login_code", headers=AUTH).json()["code"]
    with served(api.app) as url:
        monkeypatch.setattr(trialkit.client, "client_for", lambda home: MasterClient(url, TOKEN))
        out = CliRunner().invoke(cli, ["ui", "--revoke"])
    assert out.exit_code == 0, out.output
    assert "every web UI session has ended" in out.output
    for cookie in (first, second):
        api.client.cookies.clear()
        api.client.cookies.set("trialkit_session", cookie)
        assert api.client.get("/api/v1/experiments").status_code == 401
    api.client.cookies.clear()
    assert api.client.get(f"/ui/login?code={unused}").status_code == 401
    _log_in(api)  # a new link works
    assert api.client.get("/api/v1/experiments").status_code == 200


def test_revoke_without_a_master_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIALKIT_HOME", str(tmp_path / "home"))
    out = CliRunner().invoke(cli, ["ui", "--revoke"])
    assert out.exit_code == 0, out.output
    assert out.output == "no master is running: no web UI session to end\n"
    assert not (tmp_path / "home" / "master.json").exists()  # none was started for it
