"""A real PostgreSQL server for tests: initdb into a temp dir, pg_ctl start on a free loopback
port, one fresh database per test, stopped by pid at the end of the session.

Skips (with the reason) when the server binaries or psycopg are missing; `.ci/run` has both.
As root, the server runs as the ``postgres`` user, because PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trialkit.rendezvous import free_port


def _pg_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


class PostgresServer:
    """One throwaway cluster; ``new_database()`` hands each test an empty database URL."""

    def __init__(self) -> None:
        bin_dir = _pg_bin()
        if bin_dir is None:
            pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found")
        pytest.importorskip(
            "psycopg", reason="psycopg not installed (pip install trialkit[postgres])"
        )
        self._bin = bin_dir
        self._root = Path(tempfile.mkdtemp(prefix="trialkit-pg-"))
        self._data = self._root / "data"
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self._root, user="postgres")
            self._as_user = ["runuser", "-u", "postgres", "--"]
        self.port = free_port()
        self._names = itertools.count()
        self._run("initdb", "-D", str(self._data), "--auth=trust", "-U", "postgres", "-E", "UTF8")
        self.start()

    def start(self) -> None:
        """Start the server on its port and data directory (again, after ``kill``)."""
        self._run(
            "pg_ctl", "-D", str(self._data), "-l", str(self._root / "server.log"), "-w", "-t", "30",
            "-o", f"-p {self.port} -k {self._root} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        )  # fmt: skip

    def _run(self, tool: str, *args: str) -> None:
        proc = subprocess.run(
            [*self._as_user, str(self._bin / tool), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{tool} failed ({proc.returncode}): {proc.stderr or proc.stdout}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        name = f"t{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def processes(self) -> list[Any]:
        """The server's live processes (psutil): the postmaster first, then its children."""
        import psutil

        postmaster = psutil.Process(int((self._data / "postmaster.pid").read_text().split()[0]))
        return [postmaster, *postmaster.children(recursive=True)]

    def cpu_seconds(self) -> float:
        """CPU time the server has used so far: the postmaster, its live processes and the
        exited ones it reaped."""
        import psutil

        postmaster, *children = self.processes()
        t = postmaster.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in children:
            try:
                c = child.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += c.user + c.system
        return float(total)

    def kill(self) -> None:
        """SIGKILL every process of the server at once, as a crash or an OOM kill would; the
        next ``start`` recovers from its write-ahead log."""
        import psutil

        processes = self.processes()
        for proc in processes:
            try:
                proc.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(processes, timeout=10)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self._data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self._root, ignore_errors=True)


def postgres_server_fixture() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        yield server
    finally:
        server.stop()
