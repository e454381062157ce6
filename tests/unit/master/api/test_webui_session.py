"""Login codes and session cookies of the web UI, on a controlled clock."""

from __future__ import annotations

from trialkit.master.api._ui_session import CODE_TTL, SESSION_TTL, UiSessions


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_code_works_once() -> None:
    sessions = UiSessions("admin-token", Clock())
    code = sessions.new_code()
    cookie = sessions.redeem(code)
    assert cookie is not None and sessions.valid(cookie)
    assert sessions.redeem(code) is None


def test_a_code_expires() -> None:
    clock = Clock()
    sessions = UiSessions("admin-token", clock)
    code = sessions.new_code()
    clock.now += CODE_TTL + 1
    assert sessions.redeem(code) is None


def test_wrong_codes_and_forged_cookies_are_refused() -> None:
    clock = Clock()
    sessions = UiSessions("admin-token", clock)
    sessions.new_code()
    assert sessions.redeem("not-a-code") is None
    assert sessions.redeem("") is None
    cookie = sessions.redeem(sessions.new_code())
    assert cookie is not None
    expiry, nonce, sig = cookie.split(".")
    assert not sessions.valid(f"{int(expiry) + 10_000}.{nonce}.{sig}")  # extended by hand
    assert not sessions.valid(f"{expiry}.{nonce}.{'0' * len(sig)}")
    assert not sessions.valid(None) and not sessions.valid("a.b")
    # Another master (another token) does not accept it; nor does this one once it expires.
    assert not UiSessions("other-token", clock).valid(cookie)
    clock.now += SESSION_TTL + 1
    assert not sessions.valid(cookie)


def test_the_cookie_does_not_hold_the_token() -> None:
    token = "admin-token-0123456789"
    sessions = UiSessions(token, Clock())
    cookie = sessions.redeem(sessions.new_code())
    assert cookie is not None and token not in cookie


def test_logout_ends_that_session_only() -> None:
    sessions = UiSessions("admin-token", Clock())
    mine, other = sessions.redeem(sessions.new_code()), sessions.redeem(sessions.new_code())
    sessions.logout(mine)
    assert not sessions.valid(mine) and sessions.valid(other)
    sessions.logout("a.b.c")  # not a session: nothing happens
    assert sessions.valid(other)


def test_revoke_all_ends_every_session_and_unused_code() -> None:
    sessions = UiSessions("admin-token", Clock())
    cookies = [sessions.redeem(sessions.new_code()) for _ in range(3)]
    unused = sessions.new_code()
    sessions.revoke_all()
    assert not any(sessions.valid(c) for c in cookies)
    assert sessions.redeem(unused) is None
    assert sessions.valid(sessions.redeem(sessions.new_code()))  # a new login works


def test_a_restarted_master_does_not_accept_the_old_cookie() -> None:
    clock = Clock()
    first = UiSessions("admin-token", clock)
    cookie = first.redeem(first.new_code())
    assert cookie is not None and not UiSessions("admin-token", clock).valid(cookie)
