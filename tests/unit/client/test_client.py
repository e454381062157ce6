"""The master client: JSON-safe report values (reference §1.5: NaN/Inf as strings, numpy unwrapped),
the master file, and requests against a real loopback HTTP server."""

from __future__ import annotations

import json
import math
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trialkit._json import dumps, to_jsonable
from trialkit.client._master_client import (
    APIError,
    MasterClient,
    MasterUnavailable,
    read_master_file,
)

# to_jsonable -----------------------------------------------------------------------------------


def test_non_finite_floats_become_determined_strings() -> None:
    assert to_jsonable(float("nan")) == "NaN"
    assert to_jsonable(float("inf")) == "Infinity"
    assert to_jsonable(float("-inf")) == "-Infinity"
    assert to_jsonable(1.5) == 1.5


def test_plain_values_pass_through_unchanged() -> None:
    assert to_jsonable(None) is None
    assert to_jsonable(True) is True
    assert to_jsonable(3) == 3 and type(to_jsonable(3)) is int
    assert to_jsonable("s") == "s"


def test_containers_are_converted_recursively() -> None:
    value = {"a": [1, (2.0, float("nan"))], 3: {"b": float("-inf")}}
    assert to_jsonable(value) == {"a": [1, [2.0, "NaN"]], "3": {"b": "-Infinity"}}


def test_numpy_scalars_are_unwrapped() -> None:
    out = to_jsonable({"f32": np.float32(0.5), "i64": np.int64(7), "b": np.bool_(True)})
    assert out == {"f32": 0.5, "i64": 7, "b": True}
    assert type(out["f32"]) is float and type(out["i64"]) is int and type(out["b"]) is bool
    assert to_jsonable(np.float32("nan")) == "NaN"
    assert to_jsonable(np.float64("inf")) == "Infinity"
    assert to_jsonable(np.array(2.5)) == 2.5  # 0-d array


def test_numpy_arrays_become_nested_lists() -> None:
    assert to_jsonable(np.array([[1, 2], [3, 4]])) == [[1, 2], [3, 4]]
    assert to_jsonable(np.array([1.0, np.nan, np.inf])) == [1.0, "NaN", "Infinity"]


def test_unserializable_values_raise_type_error_naming_the_type() -> None:
    with pytest.raises(TypeError, match="object"):
        to_jsonable({"x": object()})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_output_is_always_strict_json(value: Any) -> None:
    out = to_jsonable(value)
    text = json.dumps(out, allow_nan=False)  # raises if a NaN/Inf slipped through
    assert json.loads(text) == out


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_finite_floats_are_kept_exactly(x: float) -> None:
    assert to_jsonable(x) == x and not math.isnan(to_jsonable(x))


# read_master_file ------------------------------------------------------------------------------


def test_read_master_file(tmp_path: Path) -> None:
    f = tmp_path / "master.json"
    f.write_text(json.dumps({"url": "http://127.0.0.1:8080", "token": "t0k", "pid": 1}))
    assert read_master_file(f) == ("http://127.0.0.1:8080", "t0k")


@pytest.mark.parametrize("content", ["", "{not json", '{"url": "http://x"}', "null", "[]", '"str"'])
def test_unreadable_master_file_is_none(tmp_path: Path, content: str) -> None:
    f = tmp_path / "master.json"
    f.write_text(content)
    assert read_master_file(f) is None


def test_missing_master_file_is_none(tmp_path: Path) -> None:
    assert read_master_file(tmp_path / "absent.json") is None


# MasterClient against a real server ------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, code: int, body: Any) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        if self.headers.get("Authorization") != "Bearer secret":
            self._reply(401, {"detail": "bad token"})
        elif self.path.startswith("/api/v1/echo"):
            self._reply(200, {"path": self.path})
        elif self.path == "/api/v1/empty":
            self._reply(204, None)
        else:
            self._reply(404, {"detail": f"no route {self.path}"})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        try:  # strict, as the master's parser is: a bare NaN is not JSON
            body = json.loads(self.rfile.read(length) or b"null", parse_constant=_not_json)
        except ValueError as e:
            self._reply(400, {"detail": str(e)})
            return
        self._reply(200, {"got": body})


def _not_json(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


@pytest.fixture
def server_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_request_sends_token_params_and_body(server_url: str) -> None:
    client = MasterClient(server_url, "secret")
    try:
        assert client.request("GET", "/api/v1/echo", params={"a": 1}) == {
            "path": "/api/v1/echo?a=1"
        }
        assert client.request("POST", "/api/v1/x", json_body={"k": [1, 2]}) == {
            "got": {"k": [1, 2]}
        }
        assert client.request("GET", "/api/v1/empty") is None
    finally:
        client.close()


def test_request_body_is_strict_json_with_numpy_and_non_finite_values(server_url: str) -> None:
    client = MasterClient(server_url, "secret")
    try:
        got = client.request(
            "POST", "/api/v1/x", json_body={"x": float("nan"), "y": np.float32(0.5), "z": [1.0]}
        )
        assert got == {"got": {"x": "NaN", "y": 0.5, "z": [1.0]}}
    finally:
        client.close()


def test_error_status_raises_api_error_with_detail(server_url: str) -> None:
    client = MasterClient(server_url, "wrong")
    try:
        with pytest.raises(APIError, match="bad token") as err:
            client.request("GET", "/api/v1/echo")
        assert err.value.status == 401
    finally:
        client.close()


def test_unreachable_master_raises_master_unavailable() -> None:
    url = closed_port_url()
    client = MasterClient(url, "secret")
    try:
        with pytest.raises(MasterUnavailable, match=url):
            client.request("GET", "/api/v1/echo", retry_for=0.1)
    finally:
        client.close()


def test_client_finds_a_moved_master_through_the_master_file(
    server_url: str, tmp_path: Path
) -> None:
    master_file = tmp_path / "master.json"
    master_file.write_text(json.dumps({"url": server_url, "token": "secret"}))
    client = MasterClient(closed_port_url(), "stale", master_file=str(master_file))
    try:
        assert client.request("GET", "/api/v1/echo", retry_for=2.0) == {"path": "/api/v1/echo"}
        assert (client.url, client.token) == (server_url, "secret")
    finally:
        client.close()


def test_dumps_is_strict_json_with_determined_strings_for_non_finite() -> None:
    import json

    text = dumps({"loss": float("nan"), "x": [float("inf"), 1.0]})
    assert json.loads(text) == {"loss": "NaN", "x": ["Infinity", 1.0]}
