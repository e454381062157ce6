"""Browser logins without the token in a URL: single-use, short-lived login codes and the signed
session cookie a code is exchanged for.

The CLI asks for a code with the admin token (``POST /api/v1/ui/login_code``) and prints
``/ui/login?code=...``; the master trades the code, once and within ``CODE_TTL`` seconds, for an
HttpOnly, SameSite=Strict cookie signed with a key derived from the admin token, so a cookie
ends with the master that issued it. Codes are kept only as hashes, in memory.
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
        # A key of its own: a cookie never holds anything the token could be recovered from.
        self._key = hmac.new(admin_token.encode(), b"trialkit-ui-session", "sha256").digest()
        self._clock = clock
        self._codes: dict[str, float] = {}  # sha256(code) -> expiry
        self._lock = threading.Lock()

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
        """Whether ``cookie`` is a session this master signed and that has not expired."""
        if not cookie or cookie.count(".") != 2:
            return False
        payload, signature = cookie.rsplit(".", 1)
        if not secrets.compare_digest(signature.encode(), self._sign(payload).encode()):
            return False
        expiry = payload.split(".", 1)[0]
        return expiry.isdigit() and int(expiry) > self._clock()
