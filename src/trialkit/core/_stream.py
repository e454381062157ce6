"""The trial side of the master's metric stream (``routes.TRIAL_METRICS_STREAM``): one
WebSocket; batches go without waiting for each answer, which the master sends in order. A
message costs a fraction of an HTTP request on both ends, which is what lets hundreds of trials
report every 50 ms (bench/README.md: stream-vs-post)."""

from __future__ import annotations

import collections
import json
import logging
import select
import socket
from typing import Any, NoReturn

from websockets.client import ClientProtocol
from websockets.exceptions import WebSocketException
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

from .. import rest
from .._json import dumps
from ..client import MasterClient, api_error
from ..errors import MasterUnavailable
from ..rest import routes

logger = logging.getLogger("trialkit.core")

#: The largest message the master reads (its ``STREAM_MAX_BYTES``); a larger batch is POSTed.
MAX_MESSAGE_BYTES = 16 * 2**20

_DATA = (Opcode.TEXT, Opcode.CONT)
_READ = 65536


class StreamUnsupported(Exception):
    """The master does not offer the stream: POST instead."""


class BatchTooLarge(Exception):
    """The batch is larger than a stream message may be: POST this one."""


class MetricStream:
    """Sends metric batches over one WebSocket, reconnecting after a failure (to wherever the
    master file says the master now is).

    The socket is driven from the calling (shipping) thread through websockets' sans-I/O
    protocol: sending costs one write, and answers are read when asked for, so a trial that
    sends a batch every 50 ms wakes once per batch, not once more for each answer."""

    def __init__(self, client: MasterClient, trial_id: int, *, timeout: float = 60.0) -> None:
        self._client = client
        self._path = routes.path(routes.TRIAL_METRICS_STREAM, trial_id=trial_id)
        self._timeout = timeout
        self._conn: tuple[socket.socket, ClientProtocol] | None = None
        self._readable: select.poll | None = None
        self._unanswered: collections.deque[int] = collections.deque()  # seqs, oldest first
        self._parts: list[bytes] = []  # the message being received, in frames
        self._broken = False  # the last connection failed: look for the master again first

    def send(self, body: dict[str, Any]) -> rest.MetricsStored:
        """Send one batch and wait for its answer: an APIError for a refusal (as the POST
        would raise), MasterUnavailable when the stream broke (the batch may have been stored:
        resend it with the same seq). Only while no other batch is in flight."""
        self.send_nowait(body)
        [(_, reply)] = self._answers(wait=True)
        error = _refusal(reply)
        if error is not None:
            raise error
        return rest.decode(rest.MetricsStored, reply, "metric stream answer")

    def send_nowait(self, body: dict[str, Any]) -> None:
        """Send one batch (with its ``seq``); ``outcomes`` tells later what became of it.
        MasterUnavailable when the stream broke: every batch in flight must go again."""
        text = dumps(body)
        # (A character takes at most 4 bytes: most batches need no encoding to be measured.)
        if len(text) > MAX_MESSAGE_BYTES // 4 and len(text.encode()) > MAX_MESSAGE_BYTES:
            raise BatchTooLarge(f"a batch over {MAX_MESSAGE_BYTES} bytes")
        sock, protocol = self._conn or self._connect()
        try:
            protocol.send_text(text.encode())
            _flush(sock, protocol)
        except (OSError, WebSocketException) as e:
            self._break(e)
        self._unanswered.append(int(body["seq"]))

    def open(self) -> None:
        """Connect now unless connected (``send_nowait`` connects when it must): MasterUnavailable
        or StreamUnsupported as a send would raise."""
        if self._conn is None:
            self._connect()

    def outcomes(self, wait: bool) -> list[tuple[int, rest.MetricsStored | Exception]]:
        """(seq, reply) for each batch the master stored (or had stored), (seq, APIError) for
        each it refused, oldest first: those answered so far (with ``wait``, at least one while
        any is in flight)."""
        return [(seq, _refusal(reply) or _stored(reply)) for seq, reply in self._answers(wait)]

    def _answers(self, wait: bool) -> list[tuple[int, dict[str, Any]]]:
        if not self._unanswered or self._conn is None:
            return []
        sock, protocol = self._conn
        try:
            messages = self._receive(sock, protocol, block=wait)
            answers = [(self._unanswered.popleft(), json.loads(m)) for m in messages]
        except (OSError, WebSocketException, ValueError, IndexError) as e:
            self._break(e)
        for seq, reply in answers:
            if reply.get("seq") not in (seq, None):  # None: a message it could not read
                self._break(ValueError(f"answer for batch {reply.get('seq')}, expected {seq}"))
        return answers

    def _receive(self, sock: socket.socket, protocol: ClientProtocol, block: bool) -> list[bytes]:
        """The text messages that have arrived (with ``block``: at least one); pings are
        answered on the way."""
        assert self._readable is not None
        messages: list[bytes] = []
        while True:
            for event in protocol.events_received():
                if not isinstance(event, Frame) or event.opcode not in _DATA:
                    continue
                self._parts.append(bytes(event.data))
                if event.fin:
                    messages.append(b"".join(self._parts))
                    self._parts = []
            _flush(sock, protocol)  # pongs, or the answer to a close
            if (messages or not block) and not self._readable.poll(0):
                return messages
            data = sock.recv(_READ)
            if not data:
                raise ConnectionResetError("the master closed the stream")
            protocol.receive_data(data)
            if protocol.state in (State.CLOSING, State.CLOSED):
                raise ConnectionResetError("the master closed the stream")

    def _break(self, e: Exception) -> NoReturn:
        self.close()
        self._broken = True
        raise MasterUnavailable(f"the metric stream to the master broke: {e}") from e

    def _connect(self) -> tuple[socket.socket, ClientProtocol]:
        if self._broken:
            self._client.rediscover()
        url = "ws" + self._client.url.removeprefix("http") + self._path
        uri = parse_uri(url)
        protocol = ClientProtocol(uri, max_size=2**20)
        request = protocol.connect()
        request.headers["Authorization"] = f"Bearer {self._client.token}"
        protocol.send_request(request)
        try:
            sock = socket.create_connection((uri.host, uri.port), timeout=self._timeout)
        except OSError as e:
            self._broken = True
            raise MasterUnavailable(f"cannot open the metric stream at {url}: {e}") from e
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            response = self._handshake(sock, protocol)
        except BaseException:
            sock.close()
            raise
        if response.status_code != 101:
            sock.close()
            if response.status_code >= 500:
                self._broken = True
                raise MasterUnavailable(f"the master answered {response.status_code} to the stream")
            # An older master has no stream (403: it closes an unknown WebSocket), a proxy may
            # speak only HTTP, and a bad token is told precisely by the POST that follows.
            raise StreamUnsupported(f"the master answered {response.status_code} to the stream")
        self._broken = False
        self._conn = (sock, protocol)
        self._readable = select.poll()
        self._readable.register(sock, select.POLLIN)
        return self._conn

    def _handshake(self, sock: socket.socket, protocol: ClientProtocol) -> Response:
        try:
            _flush(sock, protocol)
            while True:
                data = sock.recv(_READ)
                if data:
                    protocol.receive_data(data)
                else:
                    protocol.receive_eof()
                for event in protocol.events_received():
                    if isinstance(event, Response):
                        return event
                if not data:
                    raise ConnectionResetError("the master closed the connection")
        except (OSError, WebSocketException) as e:
            self._broken = True
            raise MasterUnavailable(f"cannot open the metric stream: {e}") from e

    def close(self) -> None:
        self._unanswered.clear()
        self._parts = []
        if self._conn is not None:
            sock, protocol = self._conn
            self._conn = None
            self._readable = None
            try:
                protocol.send_close()
                _flush(sock, protocol)
            except (OSError, WebSocketException):
                pass  # going anyway
            sock.close()


def _refusal(reply: dict[str, Any]) -> Exception | None:
    """The APIError an answer carries (the status the POST would have given), else None."""
    return api_error(int(reply["status"]), reply.get("detail")) if "status" in reply else None


def _stored(reply: dict[str, Any]) -> rest.MetricsStored:
    """The reply to a stored batch (built by hand: it comes for every batch, 20 a second)."""
    return rest.MetricsStored(
        stored=reply["stored"],
        duplicate=reply.get("duplicate", False),
        is_best_validation=reply.get("is_best_validation"),
    )


def _flush(sock: socket.socket, protocol: ClientProtocol) -> None:
    data = protocol.data_to_send()
    if data:
        sock.sendall(b"".join(data))
