"""HTTP client for the master's REST API, shared by trial processes and the CLI.

The master records its address and token in a 0600 file; when a connection fails the client
re-reads that file, so a restarted master (on a new port) is found again without losing work.
A trial's client takes only the address from it and keeps its own per-trial token.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import httpx

from ._json import dumps
from .errors import APIError, MasterUnavailable

_JSON_HEADERS = {"content-type": "application/json"}

# httpx logs every request at INFO, which would flood trial logs.
logging.getLogger("httpx").setLevel(logging.WARNING)


def read_master_file(path: str | os.PathLike[str]) -> tuple[str, str] | None:
    """(url, token) from a master file, or None when there is none."""
    try:
        d = json.loads(Path(path).read_text())
        return str(d["url"]), str(d["token"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class MasterClient:
    """Calls the master; reconnects through the master file when the master moved."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        master_file: str | None = None,
        timeout: float = 30.0,
        token_from_file: bool = True,
    ) -> None:
        self.url = url
        self.token = token
        self.master_file = master_file
        #: False for a trial: the master file's admin token is not for it, only its address.
        self.token_from_file = token_from_file
        self._timeout = timeout
        self._http = self._new_http()

    def _new_http(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=self._timeout,
            trust_env=False,
            # The master speaks plain HTTP on loopback: no TLS context to build (loading the CA
            # bundle for it took 30 ms of every CLI command). An https URL still verifies.
            verify=not self.url.startswith("http://"),
        )

    def close(self) -> None:
        self._http.close()

    def _rediscover(self) -> None:
        if not self.master_file:
            return
        found = read_master_file(self.master_file)
        if found and not self.token_from_file:
            found = (found[0], self.token)
        if found and found != (self.url, self.token):
            self.url, self.token = found
            self._http.close()
            self._http = self._new_http()

    def _rediscover_token(self) -> bool:
        """Re-read the master file; True when it holds credentials other than ours."""
        before = (self.url, self.token)
        self._rediscover()
        return (self.url, self.token) != before

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: dict[str, Any] | None = None,
        retry_for: float = 0.0,
        timeout: float | None = None,
    ) -> Any:
        """Send a request; keep retrying connection failures for ``retry_for`` seconds."""
        deadline = time.monotonic() + retry_for
        delay = 0.05
        while True:
            try:
                resp = self._http.request(
                    method,
                    path,
                    content=None if json_body is None else dumps(json_body).encode(),
                    headers=_JSON_HEADERS if json_body is not None else None,
                    params=params,
                    timeout=timeout if timeout is not None else self._timeout,
                )
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as e:
                self._rediscover()
                if time.monotonic() >= deadline:
                    raise MasterUnavailable(f"cannot reach the master at {self.url}: {e}") from e
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            if resp.status_code == 401 and self._rediscover_token():
                continue  # a restarted master: same address, new token
            return self._decode(resp)

    @staticmethod
    def _decode(resp: httpx.Response) -> Any:
        if resp.status_code >= 400:
            try:
                detail = resp.json().get("detail", resp.text)
            except ValueError:
                detail = resp.text
            if isinstance(detail, dict) and isinstance(detail.get("errors"), list):
                errors = [str(e) for e in detail["errors"]]
                raise APIError(resp.status_code, "\n".join(errors), errors)
            raise APIError(resp.status_code, str(detail))
        if not resp.content:
            return None
        return resp.json()
