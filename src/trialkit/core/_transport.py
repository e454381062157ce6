"""The wire under DistributedContext: a star of TCP connections around one hub rank.

The hub (rank 0 of the group) listens on a port chosen per job (never a constant); every other
rank connects to it. The handshake is JSON and mutual: each side proves it knows the job token
by an HMAC over both sides' fresh nonces (the token itself never crosses the wire), the hub
first. Only then are messages pickled Python objects, length-prefixed, each carrying an HMAC
under a key of that connection and direction, checked before it is unpickled: a process that
does not know the token (another user's, squatting on the port) is never unpickled from and
learns nothing it could replay. One reader thread per connection turns the socket into a queue,
so a peer that goes away is noticed at once: the hub tells every other rank which rank was lost,
and each rank raises ``PeerLostError`` naming it at its current or next collective instead of
hanging. Every wait has a deadline. Standard library only (no framework, no zmq).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import pickle
import queue
import re
import secrets
import socket
import struct
import threading
import time
from typing import Any

from ..rendezvous import TOKEN_ENV

_HEADER = struct.Struct("!Q")
_SEQ = struct.Struct("!Q")
_MAC_SIZE = hashlib.sha256().digest_size
_MAX_HELLO = 4096
_NONCE = re.compile(r"[0-9a-f]{32}")
_EOF = ("eof",)


class DistributedError(RuntimeError):
    """A collective could not complete (a peer is gone, timed out, or called a different op)."""


class PeerLostError(DistributedError):
    """A rank exited or disconnected; ``rank`` names it."""

    def __init__(self, rank: int, detail: str = "") -> None:
        who = "chief (rank 0)" if rank == 0 else f"rank {rank}"
        msg = f"worker {who} exited/disconnected"
        super().__init__(f"{msg}: {detail}" if detail else msg)
        self.rank = rank


class _Handshake:
    """The mutual proof of one connection: both nonces, the worker's rank and the group size."""

    def __init__(self, token: str, worker_nonce: str, hub_nonce: str, rank: int, size: int) -> None:
        self._key = token.encode()
        self._context = f"{worker_nonce}|{hub_nonce}|{rank}|{size}"

    def _mac(self, label: str) -> bytes:
        return hmac.new(self._key, f"{label}|{self._context}".encode(), hashlib.sha256).digest()

    def proof(self, side: str) -> str:
        """What ``side`` ('hub' or 'worker') sends to show it knows the token."""
        return self._mac(f"proof-{side}").hex()

    def check(self, side: str, proof: object) -> bool:
        return isinstance(proof, str) and hmac.compare_digest(proof, self.proof(side))

    def keys(self, side: str) -> tuple[bytes, bytes]:
        """(send key, receive key) of ``side`` for the messages after the handshake."""
        to_worker, to_hub = self._mac("hub-to-worker"), self._mac("worker-to-hub")
        return (to_worker, to_hub) if side == "hub" else (to_hub, to_worker)


def _json_frame(obj: dict[str, Any]) -> bytes:
    data = json.dumps(obj).encode()
    return _HEADER.pack(len(data)) + data


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes straight from the socket (no read-ahead past a handshake frame)."""
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise EOFError("connection closed during the handshake")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _recv_json(sock: socket.socket) -> Any:
    """One handshake frame, or ValueError when it is not a small JSON object."""
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if n > _MAX_HELLO:
        raise ValueError(f"a handshake frame of {n} bytes")
    msg = json.loads(_recv_exact(sock, n))
    if not isinstance(msg, dict):
        raise ValueError("a handshake frame that is not a JSON object")
    return msg


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _pickled(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _tag(key: bytes, seq: int, body: bytes) -> bytes:
    mac = hmac.new(key, _SEQ.pack(seq), hashlib.sha256)
    mac.update(body)
    return mac.digest()


class _Conn:
    """One authenticated socket: locked sends, a reader thread feeding a queue. Every frame is
    ``length, HMAC(key, sequence number + body), pickled body``; a frame whose HMAC is wrong
    (or out of order) ends the connection without being unpickled."""

    def __init__(
        self, sock: socket.socket, peer: int, name: str, keys: tuple[bytes, bytes]
    ) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)
        self.sock = sock
        self.peer = peer
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._send_lock = threading.Lock()
        self._send_key, self._recv_key = keys
        self._send_seq = 0
        self._recv_seq = 0
        self._rfile = sock.makefile("rb")
        self.said_bye = False
        self.closed = False
        self._thread = threading.Thread(target=self._read_loop, name=name, daemon=True)

    def start(self, on_eof: Any = None) -> None:
        self._on_eof = on_eof
        self._thread.start()

    def _read_loop(self) -> None:
        try:
            while True:
                head = self._rfile.read(_HEADER.size)
                if len(head) < _HEADER.size:
                    break
                (n,) = _HEADER.unpack(head)
                tag = self._rfile.read(_MAC_SIZE)
                body = self._rfile.read(n)
                if len(body) < n or not self._authentic(tag, body):
                    break
                msg = pickle.loads(body)
                if msg[0] == "bye":
                    self.said_bye = True
                    continue
                self.inbox.put(msg)
        except (OSError, ValueError, pickle.UnpicklingError, EOFError):
            pass
        self.inbox.put(_EOF)
        if self._on_eof is not None:
            self._on_eof(self)

    def _authentic(self, tag: bytes, body: bytes) -> bool:
        expected = _tag(self._recv_key, self._recv_seq, body)
        self._recv_seq += 1
        return hmac.compare_digest(tag, expected)

    def send_raw(self, body: bytes) -> None:
        """Send one already pickled message."""
        with self._send_lock:
            tag = _tag(self._send_key, self._send_seq, body)
            self._send_seq += 1
            self.sock.sendall(_HEADER.pack(len(body)) + tag + body)

    def send(self, obj: Any) -> None:
        self.send_raw(_pickled(obj))

    def recv(self, deadline: float) -> Any:
        remaining = deadline - time.monotonic()
        try:
            return self.inbox.get(timeout=max(remaining, 0.0))
        except queue.Empty:
            return None

    def close(self, say_bye: bool = True) -> None:
        if self.closed:
            return
        self.closed = True
        if say_bye:
            try:
                self.send(("bye",))
            except OSError:
                pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class Star:
    """One group of ``size`` ranks; ``rank`` 0 is the hub. All collectives are blocking."""

    def __init__(
        self,
        *,
        rank: int,
        size: int,
        host: str,
        port: int,
        token: str,
        timeout: float,
        connect_timeout: float,
        bind_host: str | None = None,
        label: str = "",
        listener: socket.socket | None = None,
    ) -> None:
        self.rank = rank
        self.size = size
        self.timeout = timeout
        self._token = token
        self._label = label
        self._seq = 0
        self._lost: dict[int, str] = {}
        self._lost_lock = threading.Lock()
        self._closed = False
        self.address = (host, port)
        self._peers: dict[int, _Conn] = {}
        if rank == 0:
            self._serve(listener, bind_host or host, port, connect_timeout)
        else:
            self._hub = self._connect(host, port, connect_timeout)

    # Setup ---------------------------------------------------------------------------------

    def _serve(
        self, listener: socket.socket | None, host: str, port: int, connect_timeout: float
    ) -> None:
        if listener is None:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                listener.bind((host, port))
            except OSError as e:
                listener.close()
                raise DistributedError(
                    f"{self._label}chief cannot listen on {host}:{port}: {e.strerror}; another "
                    "job may hold the port (the launcher picks a free one: use "
                    "python -m trialkit.launch.torch_distributed, or set TRIALKIT_CHIEF_PORT)"
                ) from None
            listener.listen(self.size + 8)
        self.address = (self.address[0], listener.getsockname()[1])
        deadline = time.monotonic() + connect_timeout
        pending: list[_Conn] = []
        try:
            while len(self._peers) < self.size - 1:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    missing = sorted(set(range(1, self.size)) - set(self._peers))
                    raise DistributedError(
                        f"{self._label}timed out after {connect_timeout:.0f}s waiting for ranks "
                        f"{missing} to connect to the chief at {host}:{self.address[1]}"
                    )
                listener.settimeout(min(remaining, 1.0))
                try:
                    sock, _ = listener.accept()
                except TimeoutError:
                    continue
                self._handshake(sock, deadline, pending)
            for conn in self._peers.values():
                conn.send(("ready",))
        except BaseException:
            for conn in pending:
                conn.close(say_bye=False)
            raise
        finally:
            listener.close()
        for conn in self._peers.values():
            conn.start(self._on_peer_eof)

    def _handshake(self, sock: socket.socket, deadline: float, pending: list[_Conn]) -> None:
        """Admit one connecting rank once it proved it knows the token; else drop it."""
        sock.settimeout(min(max(deadline - time.monotonic(), 0.1), 5.0))
        try:
            hello = _recv_json(sock)
            rank, size, worker_nonce = hello.get("rank"), hello.get("size"), hello.get("nonce")
            if not (
                hello.get("hello") == "trialkit"
                and _is_int(rank)
                and _is_int(size)
                and isinstance(worker_nonce, str)
                and _NONCE.fullmatch(worker_nonce)
            ):
                raise ValueError("not a trialkit worker")
            hub_nonce = secrets.token_hex(16)
            shake = _Handshake(self._token, worker_nonce, hub_nonce, rank, size)
            sock.sendall(_json_frame({"nonce": hub_nonce, "proof": shake.proof("hub")}))
            answer = _recv_json(sock)
        except (OSError, ValueError, EOFError, struct.error):
            sock.close()
            return
        reason = None
        if not shake.check("worker", answer.get("proof")):
            reason = "wrong job token (a rank of another job reached this port)"
        elif size != self.size:
            reason = f"it says size={size}, the chief has size={self.size}"
        elif not 0 < rank < self.size:
            reason = f"rank {rank} is outside [1, {self.size})"
        elif rank in self._peers:
            reason = f"rank {rank} connected twice"
        try:
            sock.sendall(_json_frame({"reject": reason} if reason else {"accepted": True}))
        except OSError:
            reason = reason or "connection closed during the handshake"
        if reason is not None:
            sock.close()
            return
        conn = _Conn(sock, rank, f"trialkit-dist-r{rank}", shake.keys("hub"))
        pending.append(conn)
        self._peers[rank] = conn

    def _connect(self, host: str, port: int, connect_timeout: float) -> _Conn:
        deadline = time.monotonic() + connect_timeout
        last = ""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DistributedError(
                    f"{self._label}rank {self.rank} could not reach the chief at {host}:{port} "
                    f"within {connect_timeout:.0f}s ({last}); did the chief start?"
                )
            try:
                sock = socket.create_connection((host, port), timeout=min(remaining, 5.0))
            except OSError as e:  # the chief is not listening yet: retry until the deadline
                last = e.strerror or str(e)
                time.sleep(0.05)
                continue
            try:
                keys = self._prove(sock, host, port, deadline)
            except (OSError, EOFError) as e:
                sock.close()
                last = str(e) if isinstance(e, EOFError) else (e.strerror or str(e))
                time.sleep(0.05)
                continue
            except DistributedError:
                sock.close()
                raise
            conn = _Conn(sock, 0, f"trialkit-dist-hub{self._label.strip(': ')}", keys)
            conn.start()
            msg = conn.recv(deadline)
            if msg is None:
                conn.close(say_bye=False)
                last = "connected, but the chief never said ready: are all ranks running?"
                continue
            if msg[0] != "ready":
                conn.close(say_bye=False)
                if msg == _EOF:
                    last = "connection closed during the handshake"
                    time.sleep(0.05)
                    continue
                raise DistributedError(f"{self._label}unexpected handshake reply {msg[0]!r}")
            return conn

    def _prove(
        self, sock: socket.socket, host: str, port: int, deadline: float
    ) -> tuple[bytes, bytes]:
        """The worker's half of the handshake: the hub proves itself first, then we do; the
        keys for the messages that follow. Nothing is unpickled here."""
        sock.settimeout(min(max(deadline - time.monotonic(), 0.1), 5.0))
        worker_nonce = secrets.token_hex(16)
        hello = {"hello": "trialkit", "rank": self.rank, "size": self.size, "nonce": worker_nonce}
        sock.sendall(_json_frame(hello))
        impostor = DistributedError(
            f"{self._label}rank {self.rank}: the process listening on {host}:{port} is not this "
            f"job's chief: it did not prove it knows the job token ({TOKEN_ENV}), so it is "
            "another job's chief or another program, and nothing it sent was used"
        )
        try:
            challenge = _recv_json(sock)
        except (ValueError, struct.error):
            raise impostor from None
        hub_nonce = challenge.get("nonce")
        if not (isinstance(hub_nonce, str) and _NONCE.fullmatch(hub_nonce)):
            raise impostor
        shake = _Handshake(self._token, worker_nonce, hub_nonce, self.rank, self.size)
        if not shake.check("hub", challenge.get("proof")):
            raise impostor
        sock.sendall(_json_frame({"proof": shake.proof("worker")}))
        try:
            verdict = _recv_json(sock)
        except (ValueError, struct.error):
            raise impostor from None
        if verdict.get("accepted") is not True:
            raise DistributedError(
                f"{self._label}the chief at {host}:{port} refused rank {self.rank}: "
                f"{verdict.get('reject')}"
            )
        return shake.keys("worker")

    # Failure propagation -------------------------------------------------------------------

    def _on_peer_eof(self, conn: _Conn) -> None:
        """Hub: a worker's connection closed; unless it said bye, tell everyone else."""
        if conn.said_bye or self._closed:
            return
        with self._lost_lock:
            self._lost.setdefault(conn.peer, "connection closed")
        frame = _pickled(("abort", conn.peer, "connection closed"))
        for other in list(self._peers.values()):
            if other is not conn and not other.closed:
                other.inbox.put(("abort", conn.peer, "connection closed"))  # wakes our own wait
                try:
                    other.send_raw(frame)
                except OSError:
                    pass

    def _check_lost(self) -> None:
        if self._lost:
            rank = min(self._lost)
            raise PeerLostError(rank, f"{self._label}noticed by rank {self.rank}".rstrip())

    # Receiving -----------------------------------------------------------------------------

    def _expect(self, conn: _Conn, op: str, deadline: float) -> Any:
        msg = conn.recv(deadline)
        if msg is None:
            who = "the chief" if conn.peer == 0 else f"rank {conn.peer}"
            raise DistributedError(
                f"{self._label}rank {self.rank} timed out after {self.timeout:.0f}s in {op} "
                f"waiting for {who} (a rank may be stuck or skipped this collective; "
                "raise TRIALKIT_DIST_TIMEOUT if it is just slow)"
            )
        if msg == _EOF:
            if conn.said_bye:
                who = "the chief" if conn.peer == 0 else f"rank {conn.peer}"
                raise DistributedError(
                    f"{self._label}{who} closed its DistributedContext while rank {self.rank} "
                    f"was in {op}"
                )
            raise PeerLostError(conn.peer, f"{self._label}rank {self.rank} was in {op}")
        if msg[0] == "abort":
            raise PeerLostError(msg[1], f"{self._label}rank {self.rank} was in {op}")
        kind, seq, payload = msg
        if kind != op or seq != self._seq:
            raise DistributedError(
                f"{self._label}collectives out of step: rank {self.rank} is in {op} #{self._seq} "
                f"but rank {conn.peer} sent {kind} #{seq}; every rank must call the same "
                "collectives in the same order"
            )
        return payload

    def _begin(self) -> float:
        if self._closed:
            raise DistributedError("DistributedContext is closed")
        self._seq += 1
        if self.rank == 0:
            self._check_lost()
        return time.monotonic() + self.timeout

    def _collect(self, op: str, stuff: Any, deadline: float) -> list[Any]:
        out = [stuff]
        for r in range(1, self.size):
            out.append(self._expect(self._peers[r], op, deadline))
        return out

    def _send_all(self, frame: bytes) -> None:
        for r in range(1, self.size):
            try:
                self._peers[r].send_raw(frame)
            except OSError:
                self._check_lost()
                raise PeerLostError(r, f"{self._label}send failed") from None

    # Collectives ---------------------------------------------------------------------------

    def gather(self, stuff: Any) -> list[Any] | None:
        deadline = self._begin()
        if self.rank == 0:
            out = self._collect("gather", stuff, deadline)
            self._send_all(_pickled(("sync", self._seq, None)))
            return out
        self._hub.send(("gather", self._seq, stuff))
        self._expect(self._hub, "sync", deadline)
        return None

    def allgather(self, stuff: Any) -> list[Any]:
        deadline = self._begin()
        if self.rank == 0:
            out = self._collect("allgather", stuff, deadline)
            self._send_all(_pickled(("allgather", self._seq, out)))
            return out
        self._hub.send(("allgather", self._seq, stuff))
        return self._expect(self._hub, "allgather", deadline)  # type: ignore[no-any-return]

    def broadcast(self, stuff: Any) -> Any:
        deadline = self._begin()
        if self.rank == 0:
            self._send_all(_pickled(("broadcast", self._seq, stuff)))
            return stuff
        return self._expect(self._hub, "broadcast", deadline)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.rank == 0:
            for conn in self._peers.values():
                conn.close()
        else:
            self._hub.close()


def listen_any(host: str) -> socket.socket:
    """A listening socket on a port the OS picks (for groups whose address is exchanged)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((host, 0))
    s.listen(64)
    return s
