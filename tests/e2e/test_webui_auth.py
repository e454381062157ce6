"""Browser login on a real master: the CLI's one-time link, the cookie it buys, and that the
token is in no page, link or log."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from .conftest import Master

pytestmark = pytest.mark.integration

_LINK = re.compile(r"(http://127\.0\.0\.1:\d+)/ui/login\?code=([\w-]+)")


def _login_link(master: Master) -> tuple[str, str]:
    out = master.cli("ui", "--no-open").stdout
    found = _LINK.search(out)
    assert found, out
    return found[1], found[2]


def test_login_link_gives_a_cookie_once(master: Master) -> None:
    base, code = _login_link(master)
    token = master.client.token
    with httpx.Client(base_url=base, trust_env=False) as browser:
        assert browser.get("/ui/").status_code == 401
        assert browser.get("/api/v1/experiments").status_code == 401
        first = browser.get(f"/ui/login?code={code}")
        assert first.status_code == 303 and first.headers["location"] == "/ui/"
        set_cookie = first.headers["set-cookie"].lower()
        assert "httponly" in set_cookie and "samesite=strict" in set_cookie
        assert token not in first.headers["set-cookie"]
        # The cookie stands for the token: pages and API routes alike.
        page = browser.get("/ui/")
        assert page.status_code == 200 and "<title>trialkit</title>" in page.text
        assert browser.get("/api/v1/experiments").json() == {"experiments": []}
        assert browser.get("/ui/app.js").status_code == 200
        # A change needs the UI's header too: another page on 127.0.0.1 (any port is the same
        # site) cannot send it without a CORS preflight the master never grants.
        assert browser.post("/api/v1/ui/login_code").status_code == 401
        preflight = browser.options(
            "/api/v1/ui/login_code",
            headers={"Origin": "http://127.0.0.1:9", "Access-Control-Request-Method": "POST"},
        )
        assert "access-control-allow-origin" not in preflight.headers
        # Nor can the page renew its own session: a code needs the master token.
        renewal = browser.post("/api/v1/ui/login_code", headers={"X-Trialkit-UI": "1"})
        assert renewal.status_code == 403
    with httpx.Client(base_url=base, trust_env=False) as other:
        again = other.get(f"/ui/login?code={code}")
        assert again.status_code == 401 and "trialkit ui" in again.text
        assert "set-cookie" not in again.headers
        assert other.get("/ui/login?code=wrong-code").status_code == 401
        assert other.get("/ui/login").status_code == 401
    with httpx.Client(base_url=base, trust_env=False, cookies={"trialkit_session": "1.2.3"}) as f:
        assert f.get("/api/v1/experiments").status_code == 401


def test_no_token_in_pages_links_or_logs(master: Master) -> None:
    token = master.client.token
    status = master.cli("master", "status").stdout
    assert "web UI   http://127.0.0.1:" in status and token not in status
    base, code = _login_link(master)
    assert token not in code
    webui = Path(__file__).resolve().parents[2] / "src" / "trialkit" / "webui"
    with httpx.Client(base_url=base, trust_env=False) as browser:
        browser.get(f"/ui/login?code={code}")
        for f in sorted(webui.rglob("*")):
            if f.is_file():
                served = browser.get(f"/ui/{f.relative_to(webui)}")
                assert served.status_code == 200, f
                assert token not in served.text
    logs = "".join(p.read_text(errors="replace") for p in master.home.glob("*.log"))
    assert token not in logs and code not in logs


def test_a_trial_token_cannot_ask_for_a_login_code(master: Master) -> None:
    from trialkit.master.api._auth import load_trial_key, trial_token

    key = load_trial_key(master.home)
    with httpx.Client(base_url=master.client.url, trust_env=False) as trial:
        resp = trial.post(
            "/api/v1/ui/login_code",
            headers={"Authorization": f"Bearer {trial_token(key, 1, 1)}"},
        )
        assert resp.status_code == 403
