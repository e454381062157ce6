"""How the processes of one trial find each other: whoever starts the workers (the master for a
multi-slot trial, a launcher) puts a free port for the chief and a job token in their
environment, and ``core.DistributedContext`` reads them there. Standard library only, so the
master and the launchers use it without importing the Core API."""

from __future__ import annotations

import socket

#: The port rank 0's DistributedContext listens on: picked free per job, never a constant.
CHIEF_PORT_ENV = "TRIALKIT_CHIEF_PORT"
#: The secret ranks prove to each other that they know before anything is unpickled.
TOKEN_ENV = "TRIALKIT_DIST_TOKEN"

__all__ = ["CHIEF_PORT_ENV", "TOKEN_ENV", "free_port", "free_ports"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port the OS reports free right now (for a launcher to hand to its workers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def free_ports(n: int, host: str = "") -> list[int]:
    """``n`` distinct TCP ports free right now on ``host`` (all interfaces by default), for the
    node that will bind them: each is held until all are picked, so none repeats."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for s in socks:
            s.bind((host, 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()
