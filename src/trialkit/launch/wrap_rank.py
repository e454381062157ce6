"""Run a command and prefix every line it prints with ``[rank=N] || `` (Determined's format).

``python3 -m trialkit.launch.wrap_rank [--no-redirect-stdio] RANK [--] SCRIPT...``: RANK is an
integer or comma-separated environment variable names tried in order (``RANK``,
``HOROVOD_RANK,OMPI_COMM_WORLD_RANK``). Lines end at ``\\n`` or ``\\r`` (tqdm-friendly). Exit status
is the command's. Under a trialkit launcher it also reports its pid and exit code to the
launcher's worker watch, so one failed worker ends the job.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from typing import BinaryIO

from ._common import WATCH_ENV, LaunchError, die_with_parent, exit_code, run_main

_LINE_END = re.compile(rb"[\r\n]")


def resolve_rank(spec: str) -> int:
    if spec.isdigit():
        return int(spec)
    for name in spec.split(","):
        value = os.environ.get(name.strip())
        if value is not None and value.strip().isdigit():
            return int(value)
    raise LaunchError(
        f"rank {spec!r}: none of these environment variables is set to an integer; pass a "
        "number or the variable your launcher sets (e.g. RANK)"
    )


def _pump(src: BinaryIO, dst: BinaryIO, prefix: bytes) -> None:
    """Copy ``src`` to ``dst`` line by line with ``prefix``; \\r and \\n both end a line."""
    pending = b""
    while True:
        chunk = src.read1(io.DEFAULT_BUFFER_SIZE) if hasattr(src, "read1") else src.read(4096)
        if not chunk:
            break
        pending += chunk
        parts = _LINE_END.split(pending)
        pending = parts.pop()
        if len(pending) >= io.DEFAULT_BUFFER_SIZE:
            parts.append(pending)
            pending = b""
        if parts:
            dst.write(b"".join(prefix + p + b"\n" for p in parts))
            dst.flush()
    if pending:
        dst.write(prefix + pending + b"\n")
        dst.flush()


class _Report:
    """The connection to the launcher's worker watch (absent when not under a launcher)."""

    def __init__(self, rank: int) -> None:
        self._sock: socket.socket | None = None
        path = os.environ.get(WATCH_ENV)
        if not path:
            return
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            s.sendall(f"hello {rank} {os.getpid()}\n".encode())
            self._sock = s
        except OSError as e:
            print(
                f"[trialkit.launch.wrap_rank] cannot reach the worker watch: {e}", file=sys.stderr
            )

    def exited(self, code: int) -> None:
        if self._sock is not None:
            try:
                self._sock.sendall(f"exit {code}\n".encode())
            except OSError:
                pass
            self._sock.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m trialkit.launch.wrap_rank",
        description="Run SCRIPT and prefix every line of its output with [rank=N] ||.",
    )
    parser.add_argument(
        "--no-redirect-stdio",
        action="store_true",
        help="pass output through unchanged (no prefix)",
    )
    parser.add_argument("rank", help="an integer, or env var names tried in order: RANK,PMI_RANK")
    parser.add_argument("script", nargs=argparse.REMAINDER, help="the command to run")
    args = parser.parse_args(argv)
    script = args.script[1:] if args.script[:1] == ["--"] else args.script
    if not script:
        raise LaunchError("no script to run: python3 -m trialkit.launch.wrap_rank RANK SCRIPT...")
    rank = resolve_rank(args.rank)
    report = _Report(rank)
    pipe = None if args.no_redirect_stdio else subprocess.PIPE
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop(WATCH_ENV, None)
    try:
        child = subprocess.Popen(
            script, stdout=pipe, stderr=pipe, env=env, preexec_fn=die_with_parent
        )
    except OSError as e:
        report.exited(127)
        raise LaunchError(f"cannot start {script[0]!r}: {e.strerror}") from None

    def forward(signum: int, _frame: object) -> None:
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, forward)
    pumps = []
    if pipe is not None:
        prefix = f"[rank={rank}] || ".encode()
        assert child.stdout is not None and child.stderr is not None
        for src, dst in ((child.stdout, sys.stdout.buffer), (child.stderr, sys.stderr.buffer)):
            t = threading.Thread(target=_pump, args=(src, dst, prefix), daemon=True)
            t.start()
            pumps.append(t)
    code = child.wait()
    for t in pumps:  # the last lines (a traceback) reach the log before the launcher acts
        t.join(timeout=1.0)
    report.exited(code)
    return exit_code(code)


if __name__ == "__main__":
    run_main(main)
