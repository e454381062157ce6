"""Finding, starting and stopping the master from the client side (CLI, SDK, searcher runner).

Everything here talks to the master over HTTP or starts it as a separate process
(``python -m trialkit.master``): a client never imports the service (master, store, FastAPI,
SQLAlchemy). The serving side lives in ``trialkit.master._daemon``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NoReturn

from .._home import PRIVATE_FILE, ensure_private_dir
from ._master_client import MasterClient, MasterUnavailable, read_master_file

MASTER_FILE = "master.json"

#: More CPU slots than this is taken for a typo: the master would run that many trials at once.
MAX_SLOTS = 1024

#: A master the CLI starts on demand stops after this long without work (seconds).
DEFAULT_IDLE_TIMEOUT = 30 * 60.0
IDLE_TIMEOUT_ENV = "TRIALKIT_MASTER_IDLE_TIMEOUT"
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


class SlotsError(ValueError):
    """A --slots value no master can use."""


def check_slots(slots: int | None) -> None:
    """Refuse a slot count below 1 or above MAX_SLOTS before anything starts."""
    if slots is not None and not 1 <= slots <= MAX_SLOTS:
        raise SlotsError(f"--slots: got {slots}; expected a whole number from 1 to {MAX_SLOTS}")


def parse_idle_timeout(text: str, source: str = "idle timeout") -> float:
    """Seconds from ``1800``, ``90s``, ``30m`` or ``2h``; 0 means never. ValueError names ``source``."""
    raw = text.strip().lower()
    number, unit = (raw[:-1], raw[-1]) if raw[-1:] in ("s", "m", "h") else (raw, "")
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        value = -1.0
    if not (0 <= value < float("inf")):
        raise ValueError(
            f"{source}: expected seconds >= 0 or a duration such as 30m or 2h (0 = never), got {text!r}"
        )
    return value


def default_idle_timeout(on_demand: bool) -> float:
    """$TRIALKIT_MASTER_IDLE_TIMEOUT if set, else 30 min for on-demand masters, never otherwise."""
    raw = os.environ.get(IDLE_TIMEOUT_ENV)
    if raw:
        return parse_idle_timeout(raw, IDLE_TIMEOUT_ENV)
    return DEFAULT_IDLE_TIMEOUT if on_demand else 0.0


def master_file(home: Path) -> Path:
    """Where a master for ``home`` records its address, token and pid (mode 0600)."""
    return home / MASTER_FILE


def client_for(home: Path, timeout: float = 30.0) -> MasterClient | None:
    """A client for the running master, or None when none answers."""
    found = read_master_file(master_file(home))
    if not found or not found[1]:
        return None
    client = MasterClient(found[0], found[1], master_file=str(master_file(home)), timeout=timeout)
    try:
        client.master_info(timeout=2.0)
    except Exception:
        client.close()
        return None
    return client


def _master_command(home: Path, slots: int | None, idle_timeout: float) -> list[str]:
    cmd = [sys.executable, "-m", "trialkit.master", "--home", str(home)]
    if slots:
        cmd += ["--slots", str(slots)]
    return [*cmd, "--idle-timeout", repr(idle_timeout)]


def start_background(
    home: Path,
    *,
    slots: int | None = None,
    wait: float = 30.0,
    idle_timeout: float | None = None,
) -> MasterClient:
    """Start a master as a detached process and wait until it answers.

    ``idle_timeout`` None: started on demand, so $TRIALKIT_MASTER_IDLE_TIMEOUT or 30 min.
    """
    check_slots(slots)
    if idle_timeout is None:
        try:
            idle_timeout = default_idle_timeout(on_demand=True)
        except ValueError as e:
            raise MasterUnavailable(str(e)) from None
    ensure_private_dir(home)
    log_path = home / "master.log"
    log = os.fdopen(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE), "ab")
    log_start = log.tell()
    with log:  # the master has its own copy
        proc = subprocess.Popen(
            _master_command(home, slots, idle_timeout),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        client = client_for(home)
        if client is not None:
            return client
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise MasterUnavailable(
        f"the master did not start{_last_error(log_path, log_start)}; see {log_path}"
    )


def run_in_foreground(home: Path, *, slots: int | None, idle_timeout: float) -> NoReturn:
    """Become the master: this process is replaced by ``python -m trialkit.master`` (same pid,
    terminal and signals), so the caller never imports the service itself."""
    check_slots(slots)
    sys.stdout.flush()
    sys.stderr.flush()
    cmd = _master_command(home, slots, idle_timeout)
    os.execv(cmd[0], cmd)


def _last_error(log_path: Path, offset: int) -> str:
    """': <the last line the failed master logged>', or '' when it logged nothing."""
    try:
        with open(log_path, "rb") as f:
            f.seek(offset)
            lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    errors = [ln for ln in lines if "Error" in ln.split(":", 1)[0]]
    return f": {errors[-1]}" if errors else ""


def stop_master(home: Path, wait: float = 15.0) -> bool:
    """Ask the running master to stop; True if one was running. A master that does not answer
    (overloaded, or hung) is sent SIGTERM instead, and one still there after ``wait`` seconds
    SIGKILL: a benchmark's master with 200 busy trials answered no health check in 2 s and was
    left running, with its trials."""
    listed = _listed_pid(home)
    ours = _is_master_of(home, listed)
    client = client_for(home)
    if client is not None:
        try:
            client.shutdown()
        except Exception:  # it stopped answering meanwhile: a signal instead
            if ours:
                _signal(listed, signal.SIGTERM)
        finally:
            client.close()
    elif ours:
        _signal(listed, signal.SIGTERM)
    else:
        return False
    deadline = time.monotonic() + wait
    while listed and time.monotonic() < deadline:
        if not _running(listed):
            return True
        time.sleep(0.05)
    if listed and _running(listed):
        _signal(listed, signal.SIGKILL)
    return True


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _listed_pid(home: Path) -> int:
    """The pid in the master file (0 when there is none)."""
    try:
        return int(json.loads(master_file(home).read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _is_master_of(home: Path, pid: int) -> bool:
    """Whether ``pid`` is alive and is ``home``'s background master (a stale master file may
    name a pid reused by anything)."""
    import psutil

    try:
        cmdline = psutil.Process(pid).cmdline() if pid else []
    except psutil.Error:
        return False
    return "trialkit.master" in cmdline and str(home) in cmdline and _running(pid)


def _running(pid: int) -> bool:
    """Alive and not a zombie (an exited master its parent has not reaped yet)."""
    import psutil  # here: the CLI's other commands need not pay for it

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
