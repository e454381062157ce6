"""How the processes of one trial find each other: whoever starts the workers (the master for a
multi-slot trial, a launcher) puts a free port for the chief and a job token in their
environment, and ``core.DistributedContext`` reads them there. Standard library only, so the
master and the launchers use it without importing the Core API."""

from __future__ import annotations

import random
import socket

#: The port rank 0's DistributedContext listens on: picked free per job, never a constant.
CHIEF_PORT_ENV = "TRIALKIT_CHIEF_PORT"
#: The secret ranks prove to each other that they know before anything is unpickled.
TOKEN_ENV = "TRIALKIT_DIST_TOKEN"

__all__ = ["CHIEF_PORT_ENV", "TOKEN_ENV", "free_port", "free_ports"]


#: Where handed-out ports come from when the kernel's ephemeral range leaves room: above Ray's
#: worker ports (10002-19999 by default) and below Linux's ephemeral range (32768-60999).
_HANDOUT_LOW = 20000
_EPHEMERAL_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
_TRIES = 64


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free right now on ``host``, for a launcher to hand to its workers."""
    return free_ports(1, host)[0]


def free_ports(n: int, host: str = "") -> list[int]:
    """``n`` distinct TCP ports free right now on ``host`` (all interfaces by default), for the
    node that will bind them: each is held until all are picked, so none repeats.

    A port is handed out now and bound later by another process. One from the kernel's ephemeral
    range can be taken meanwhile as the local end of any outgoing connection (a busy Ray node makes
    hundreds), which failed a chief's bind with EADDRINUSE in CI; so ports come from below that
    range, at random, where only listeners bind (the kernel's pick is the fallback)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            socks.append(_bind_handout(host))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _bind_handout(host: str) -> socket.socket:
    low, high = _handout_range()
    for _ in range(_TRIES if high > low else 0):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((host, random.randrange(low, high)))
            return s
        except OSError:
            s.close()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((host, 0))
    return s


def _handout_range() -> tuple[int, int]:
    """[low, high) below the kernel's ephemeral ports (empty where there is no such room)."""
    try:
        with open(_EPHEMERAL_FILE) as f:
            ephemeral_low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return (0, 0)
    return (_HANDOUT_LOW, ephemeral_low)
