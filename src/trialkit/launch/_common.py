"""What the launchers share: argument splitting, the worker watch, killing a job quickly."""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import os
import queue
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._alias import with_boot_dir
from ..contract import ClusterInfo, get_cluster_info
from ..rendezvous import CHIEF_PORT_ENV, TOKEN_ENV, free_port

WATCH_ENV = "TRIALKIT_WORKER_WATCH"
HARNESS_MODULE = "trialkit.exec.harness"
_PR_SET_PDEATHSIG = 1


class LaunchError(Exception):
    """Bad launcher input: printed as one line, exit code 1."""


def die_with_parent() -> None:
    """In a child (preexec_fn): get SIGKILL when the parent dies, so no worker outlives it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def split_overrides(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``[OVERRIDES...] -- SCRIPT...`` or ``SCRIPT...``: (overrides, script)."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return [], argv


def parse_launcher_args(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[argparse.Namespace, list[str], list[str]]:
    """(our options, the runner's own options, the worker program) from
    ``[OPTIONS] [RUNNER_ARGS... --] SCRIPT...``: before a ``--``, options we do not know go to
    the wrapped runner (torchrun, deepspeed, horovodrun); without one, everything after our
    options is the script."""
    if "--" in argv:
        overrides, script = split_overrides(argv)
        args, passthrough = parser.parse_known_args(overrides)
        return args, passthrough, script
    parser.add_argument("script", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv))
    return args, [], args.script


def script_or_trial(trial: str | None, script: list[str]) -> list[str]:
    """The worker program: SCRIPT..., or the harness for ``--trial module:Class``."""
    if trial is not None:
        if script:
            raise LaunchError(
                f"--trial {trial} takes no script arguments (got {shlex.join(script)}); pass "
                "one or the other"
            )
        if importlib.util.find_spec(HARNESS_MODULE) is None:
            raise LaunchError(
                f"--trial {trial}: the Trial harness ({HARNESS_MODULE}) is not installed in "
                "this trialkit"
            )
        return [sys.executable, "-m", HARNESS_MODULE, trial]
    if not script:
        raise LaunchError("no script to run: give the training command after the options")
    return script


def chief_ip(info: ClusterInfo | None) -> str:
    return info.container_addrs[0] if info is not None else "127.0.0.1"


def job_env(info: ClusterInfo | None, chief_port: int | None, **extra: str) -> dict[str, str]:
    """The environment every worker gets: chief address and port, job token, backend flag."""
    env = dict(os.environ)
    env["DET_CHIEF_IP"] = env.get("DET_CHIEF_IP") or chief_ip(info)
    if not env.get(CHIEF_PORT_ENV):
        env[CHIEF_PORT_ENV] = str(chief_port if chief_port is not None else free_port())
    env.setdefault(TOKEN_ENV, secrets.token_hex(16))
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = with_boot_dir(env.get("PYTHONPATH"))  # `import determined` in workers
    env.update(extra)
    return env


def slots_here(info: ClusterInfo | None, default: int = 1) -> int:
    return len(info.slot_ids) if info is not None and info.slot_ids else default


def node_addrs(info: ClusterInfo | None) -> list[str]:
    """Every node's address in the trial (just loopback without a master)."""
    return list(info.container_addrs) if info is not None else ["127.0.0.1"]


def cluster_info() -> ClusterInfo | None:
    try:
        return get_cluster_info()
    except RuntimeError as e:
        raise LaunchError(str(e)) from None


def exit_code(code: int) -> int:
    """A process's return code as a shell exit status (killed by signal N: 128 + N)."""
    return 128 - code if code < 0 else code


@dataclass
class _Worker:
    rank: int
    pid: int
    done: bool = False


@dataclass
class WorkerWatch:
    """A unix socket each worker's wrap_rank reports to: its pid at start, its code at exit.

    A worker that reports a non-zero code, or whose connection drops without a code (wrap_rank
    itself killed), is a failure, queued for the launcher at once.
    """

    path: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="tk-watch-")) / "s")
    workers: dict[int, _Worker] = field(default_factory=dict)
    failures: queue.SimpleQueue[tuple[int, int]] = field(default_factory=queue.SimpleQueue)
    finished: int = 0

    def __post_init__(self) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(self.path))
        self._sock.listen(256)
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="tk-watch", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        worker: _Worker | None = None
        with conn, conn.makefile("r") as lines:
            for line in lines:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "hello":
                    worker = _Worker(int(parts[1]), int(parts[2]))
                    with self._lock:
                        self.workers[worker.pid] = worker
                elif len(parts) == 2 and parts[0] == "exit" and worker is not None:
                    worker.done = True
                    code = int(parts[1])
                    with self._lock:
                        self.finished += 1
                    if code != 0:
                        self.failures.put((worker.rank, code))
                    return
        if worker is not None and not worker.done:
            worker.done = True
            self.failures.put((worker.rank, -int(signal.SIGKILL)))

    def pids(self) -> list[int]:
        with self._lock:
            return [w.pid for w in self.workers.values()]

    def close(self) -> None:
        self._sock.close()
        try:
            self.path.unlink()
            self.path.parent.rmdir()
        except OSError:
            pass


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def terminate(procs: list[subprocess.Popen[bytes]], worker_pids: list[int], grace: float) -> None:
    """SIGTERM every worker's process group, SIGKILL what is left after ``grace`` seconds; the
    launched programs (torchrun, ...) then get a moment to exit on their own before SIGKILL."""
    for pid in worker_pids:
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p) for p in worker_pids):
        time.sleep(0.05)
    for pid in worker_pids:
        if _alive(pid):
            _signal_group(pid, signal.SIGKILL)
    for proc in procs:
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()


def log(msg: str) -> None:
    print(f"[trialkit.launch] {msg}", file=sys.stderr, flush=True)


def supervise(
    argv: list[str], env: dict[str, str], watch: WorkerWatch, *, grace: float, expected: int
) -> int:
    """Run ``argv`` (torchrun, deepspeed, ...) and return its exit status, ending the whole job
    within ``grace`` seconds of the first failed worker."""
    return supervise_all([(argv, env)], watch, grace=grace, expected=expected)


def supervise_all(
    commands: list[tuple[list[str], dict[str, str]]],
    watch: WorkerWatch,
    *,
    grace: float,
    expected: int,
) -> int:
    """Run every ``(argv, env)`` (one runner, or one wrap_rank per worker) and return the first
    non-zero exit status, else 0; the first failed worker or program ends all of them within
    ``grace`` seconds."""
    procs = [
        subprocess.Popen(argv, env=env, start_new_session=True, preexec_fn=die_with_parent)
        for argv, env in commands
    ]
    stopping: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        stopping.append(signum)
        for pid in watch.pids():
            _signal_group(pid, signal.Signals(signum))
        for proc in procs:
            _signal_group(proc.pid, signal.Signals(signum))

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    try:
        while True:
            try:
                rank, code = watch.failures.get(timeout=0.05)
            except queue.Empty:
                codes = [proc.poll() for proc in procs]
                failed = next((c for c in codes if c), None)
                if failed is None and None in codes:
                    continue
                # A program ended with an error, or all ended; make sure no worker outlives them.
                leftovers = [p for p in watch.pids() if _alive(p)]
                if leftovers or failed is not None:
                    terminate(procs, leftovers, grace)
                if failed is None and watch.finished < expected and not stopping:
                    log(f"only {watch.finished} of {expected} workers reported an exit")
                return exit_code(failed or 0)
            what = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
            log(f"worker rank {rank} {what}: stopping the other workers")
            terminate(procs, watch.pids(), grace)
            return exit_code(code) or 1
    finally:
        watch.close()


def run_main(main: object, argv: Sequence[str] | None = None) -> None:
    """Call ``main(argv)``; a LaunchError becomes one line on stderr and exit status 1."""
    try:
        code = main(list(sys.argv[1:] if argv is None else argv))  # type: ignore[operator]
    except LaunchError as e:
        print(f"error: {e}", file=sys.stderr)
        code = 1
    sys.exit(code)
