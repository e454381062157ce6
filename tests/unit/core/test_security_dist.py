"""The distributed rendezvous is authenticated both ways before anything is unpickled: a process
squatting on the chief's port (another user's) gets no token and runs no code in a worker, and a
process without the token cannot join a chief."""

from __future__ import annotations

import json
import pickle
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trialkit.core import DistributedContext, DistributedError
from trialkit.core._transport import _Conn
from trialkit.rendezvous import TOKEN_ENV, free_port

TOKEN = "the-job-token-5f1c9a"
_HEADER = struct.Struct("!Q")


class _Evil:
    """Unpickling this creates ``path``: proof that a peer's pickle was loaded."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def _frame(data: bytes) -> bytes:
    return _HEADER.pack(len(data)) + data


def _read_frame(sock: socket.socket) -> bytes:
    head = sock.recv(_HEADER.size, socket.MSG_WAITALL)
    (n,) = _HEADER.unpack(head)
    return sock.recv(n, socket.MSG_WAITALL)


def _rank(
    rank: int, port: int, out: dict[int, Any], body: Callable[[Any], Any]
) -> threading.Thread:
    """Rank ``rank`` of 2 in a thread; its result or exception lands in ``out[rank]``."""

    def main() -> None:
        try:
            ctx = DistributedContext(
                rank=rank,
                size=2,
                local_rank=rank,
                local_size=2,
                cross_rank=0,
                cross_size=1,
                pub_port=port,
                timeout=20,
                connect_timeout=20,
            )
            try:
                out[rank] = body(ctx)
            finally:
                ctx.close()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out[rank] = e

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    return thread


def _fake_chief(port: int, replies: list[bytes], received: list[bytes]) -> threading.Thread:
    """A plain server that does not know the token: reads the worker's first frame, answers
    ``replies``, and records everything the worker sends."""
    server = socket.create_server(("127.0.0.1", port))
    server.settimeout(20)

    def serve() -> None:
        with server:
            conn, _ = server.accept()
        with conn:
            conn.settimeout(10)
            received.append(_read_frame(conn))
            for reply in replies:
                conn.sendall(reply)
            try:
                while chunk := conn.recv(65536):
                    received.append(chunk)
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def _evil_pickle(marker: Path) -> bytes:
    return pickle.dumps(("ready", _Evil(marker)))


@pytest.mark.parametrize("reply", ["pickle", "forged proof", "forged proof then pickle"])
def test_a_worker_trusts_no_process_that_cannot_prove_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reply: str
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    marker = tmp_path / "pwned"
    challenge = _frame(json.dumps({"nonce": "ab" * 16, "proof": "00" * 32}).encode())
    replies = {
        "pickle": [_frame(_evil_pickle(marker))],
        "forged proof": [challenge],
        "forged proof then pickle": [challenge, _frame(b"\0" * 32 + _evil_pickle(marker))],
    }[reply]
    port = free_port()
    received: list[bytes] = []
    chief = _fake_chief(port, replies, received)
    out: dict[int, Any] = {}
    t0 = time.monotonic()
    _rank(1, port, out, lambda ctx: ctx.allgather(1)).join(30)
    chief.join(15)

    assert not marker.exists(), "the worker unpickled what an unauthenticated peer sent"
    assert TOKEN.encode() not in b"".join(received), "the worker sent its token in the clear"
    assert isinstance(out.get(1), DistributedError), out
    assert "is not this job's chief" in str(out[1]) and TOKEN_ENV in str(out[1])
    assert time.monotonic() - t0 < 15  # at once, not after the 20 s connect timeout


def test_a_chief_admits_no_process_without_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    port = free_port()
    out: dict[int, Any] = {}
    chief = _rank(0, port, out, lambda ctx: ctx.allgather("chief"))
    deadline = time.monotonic() + 20
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except OSError:
            assert time.monotonic() < deadline, "the chief never listened"
            time.sleep(0.05)
    with sock:
        hello = {"hello": "trialkit", "rank": 1, "size": 2, "nonce": "cd" * 16, "token": "guess"}
        sock.sendall(_frame(json.dumps(hello).encode()))
        challenge = json.loads(_read_frame(sock))  # JSON: no pickle before proof, either way
        assert set(challenge) == {"nonce", "proof"} and TOKEN not in json.dumps(challenge)
        sock.sendall(_frame(json.dumps({"proof": "00" * 32}).encode()))
        verdict = json.loads(_read_frame(sock))
        assert verdict == {"reject": "wrong job token (a rank of another job reached this port)"}
        assert sock.recv(1) == b""  # and it hung up
    # The chief goes on waiting for its real rank 1, which joins.
    _rank(1, port, out, lambda ctx: ctx.allgather("worker")).join(30)
    chief.join(30)
    assert out == {0: ["chief", "worker"], 1: ["chief", "worker"]}


def test_a_frame_with_a_wrong_tag_is_dropped_unread(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    with socket.create_server(("127.0.0.1", 0)) as server:
        theirs = socket.create_connection(server.getsockname(), timeout=10)
        ours, _ = server.accept()
    conn = _Conn(ours, 0, "trialkit-test-conn", (b"k" * 32, b"k" * 32))
    conn.start()
    with theirs:
        body = _evil_pickle(marker)
        theirs.sendall(_HEADER.pack(len(body)) + b"\0" * 32 + body)  # a tag made without the key
        assert conn.recv(time.monotonic() + 10) == ("eof",)
    conn.close(say_bye=False)
    assert not marker.exists()


def test_without_a_token_ranks_on_one_machine_share_a_private_key(
    trialkit_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    port = free_port()
    out: dict[int, Any] = {}
    threads = [_rank(r, port, out, lambda ctx: ctx.allgather(ctx.rank)) for r in (0, 1)]
    for t in threads:
        t.join(30)
    assert out == {0: [0, 1], 1: [0, 1]}
    key = trialkit_home / "dist.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_text()) == 64
