"""Browser logins without the token in a URL: single-use, short-lived login codes and the signed
session cookie a code is exchanged for.

The CLI asks for a code with the admin token (``POST /api/v1/ui/login_code``) and prints
``/ui/login?code=...``; the master trades the code, once and within ``CODE_TTL`` seconds, for an
HttpOnly, SameSite=Strict cookie signed with a key this master draws at start, so a cookie
ends with the master that issued it. Codes are kept only as hashes, in memory.

A session lasts ``SESSION_TTL`` from its login and no longer: only the admin token gets a code,
so a browser cannot renew its own session. ``logout`` ends one session, ``revoke_all`` every one
(a new key: every cookie signed before is refused, every code not yet used too).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable

#: Seconds a login code may be used for.
CODE_TTL = 120.0
#: Seconds a browser session lasts.
SESSION_TTL = 12 * 3600.0
COOKIE = "trialkit_session"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class UiSessions:
    """Issues login codes, redeems them once, and signs and checks session cookies."""

    def __init__(self, admin_token: str, clock: Callable[[], float] = time.time) -> None:
        self._token = admin_token.encode()
        self._key = self._new_key()
        self._clock = clock
        self._codes: dict[str, float] = {}  # sha256(code) -> expiry
        self._ended: dict[str, float] = {}  # payload of a logged-out cookie -> its expiry
        self._lock = threading.Lock()

    def _new_key(self) -> bytes:
        # A key of its own: a cookie never holds anything the token could be recovered from,
        # and a random part so that no other master (nor this one after revoke_all) accepts it.
        salt = b"trialkit-ui-session" + secrets.token_bytes(16)
        return hmac.new(self._token, salt, "sha256").digest()

    def new_code(self) -> str:
        """A fresh login code, valid once for ``CODE_TTL`` seconds."""
        code = secrets.token_urlsafe(24)
        now = self._clock()
        with self._lock:
            self._codes = {h: t for h, t in self._codes.items() if t > now}  # drop expired ones
            self._codes[_digest(code)] = now + CODE_TTL
        return code

    def redeem(self, code: str) -> str | None:
        """A session cookie value for a valid, unused, unexpired code; None otherwise."""
        with self._lock:
            expiry = self._codes.pop(_digest(code), None)
        if expiry is None or expiry <= self._clock():
            return None
        return self._cookie(self._clock() + SESSION_TTL)

    def _cookie(self, expiry: float) -> str:
        payload = f"{int(expiry)}.{secrets.token_hex(8)}"
        return f"{payload}.{self._sign(payload)}"

    def _sign(self, payload: str) -> str:
        return hmac.new(self._key, payload.encode(), "sha256").hexdigest()

    def valid(self, cookie: str | None) -> bool:
        """Whether ``cookie`` is a session this master signed, not logged out nor expired."""
        return self._expiry(cookie) is not None

    def _expiry(self, cookie: str | None) -> float | None:
        """The expiry of a valid session cookie; None for any other value."""
        if not cookie or cookie.count(".") != 2:
            return None
        payload, signature = cookie.rsplit(".", 1)
        if not secrets.compare_digest(signature.encode(), self._sign(payload).encode()):
            return None
        expiry = payload.split(".", 1)[0]
        if not expiry.isdigit() or int(expiry) <= self._clock() or payload in self._ended:
            return None
        return float(expiry)

    def logout(self, cookie: str | None) -> None:
        """End the session of ``cookie`` (a no-op for a cookie that is not valid)."""
        expiry = self._expiry(cookie)
        if cookie is None or expiry is None:
            return
        now = self._clock()
        with self._lock:
            self._ended = {p: t for p, t in self._ended.items() if t > now}  # drop expired ones
            self._ended[cookie.rsplit(".", 1)[0]] = expiry

    def revoke_all(self) -> None:
        """End every browser session and unused login code."""
        with self._lock:
            self._key = self._new_key()
            self._codes.clear()
            self._ended.clear()
