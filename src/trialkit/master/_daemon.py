"""Running a master: the server process, its 0600 master file, and starting/stopping it.

The master runs with umask 077, so everything it and its trials create under the home is
private to the user (docs/security.md)."""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from .._client import MasterClient, MasterUnavailable, read_master_file
from .._home import PRIVATE_FILE, PRIVATE_UMASK, ensure_private_dir, make_private

logger = logging.getLogger("trialkit.master")

MASTER_FILE = "master.json"

#: More CPU slots than this is taken for a typo: the master would run that many trials at once.
MAX_SLOTS = 1024


class SlotsError(ValueError):
    """A --slots value no master can use."""


def check_slots(slots: int | None) -> None:
    """Refuse a slot count below 1 or above MAX_SLOTS before anything starts."""
    if slots is not None and not 1 <= slots <= MAX_SLOTS:
        raise SlotsError(f"--slots: got {slots}; expected a whole number from 1 to {MAX_SLOTS}")


#: A master the CLI starts on demand stops after this long without work (seconds).
DEFAULT_IDLE_TIMEOUT = 30 * 60.0
IDLE_TIMEOUT_ENV = "TRIALKIT_MASTER_IDLE_TIMEOUT"
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


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


class _ActivityTracker:
    """ASGI wrapper that notes when the last API call (any but /health) arrived."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.last = time.monotonic()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") != "/health":
            self.last = time.monotonic()
        await self.app(scope, receive, send)


def _stop_when_idle(
    timeout: float, tracker: _ActivityTracker, busy: Any, stop: Any, done: threading.Event
) -> None:
    """Call ``stop`` once ``timeout`` s pass while not ``busy()`` and with no API call."""
    while not done.wait(min(timeout / 4, 5.0)):
        now = time.monotonic()
        if busy():
            tracker.last = now
        elif now - tracker.last >= timeout:
            logger.info(
                "idle for %.0f s (no running trial, no experiment with work left, no API call): "
                "stopping",
                timeout,
            )
            stop()
            return


def master_file(home: Path) -> Path:
    return home / MASTER_FILE


def _free_port(preferred: int | None, host: str) -> int:
    """The preferred port (the previous master's, so trials find it again) if free, else any."""
    for port in ([preferred] if preferred else []) + [0]:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise RuntimeError("no free port")


def _write_master_file(path: Path, info: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), PRIVATE_FILE)
        json.dump(info, f)
    os.replace(tmp, path)


def _make_store_private(home: Path) -> None:
    """A SQLite store in the home (and its journal files) readable by the user only; a store
    made by an older trialkit with the user's umask is tightened here."""
    for name in ("trialkit.db", "trialkit.db-wal", "trialkit.db-shm", "trialkit.db-journal"):
        make_private(home / name)


def detect_gpus() -> int:
    """Number of NVIDIA GPUs (0 when nvidia-smi is absent or fails)."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return 0
    return (
        sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
        if out.returncode == 0
        else 0
    )


def serve(
    home: Path,
    *,
    host: str = "127.0.0.1",
    slots: int | None = None,
    db_url: str | None = None,
    idle_timeout: float = 0.0,
) -> None:
    """Run a master in this process until SIGTERM/SIGINT, an API shutdown, or ``idle_timeout``
    seconds with no running trial, no managed experiment with work left and no API call
    (0: never)."""
    check_slots(slots)
    # Here, not at import: the CLI imports this module for client_for and must stay fast.
    import uvicorn

    from ..store import ExperimentState, Store
    from ._app import create_app
    from ._auth import load_trial_key
    from ._engine import Engine, EngineSettings

    # Everything this process and the trials it starts create is private to the user.
    os.umask(PRIVATE_UMASK)
    ensure_private_dir(home)
    mfile = master_file(home)
    previous = _previous_port(mfile)
    port = _free_port(previous, host)
    token = secrets.token_urlsafe(32)
    trial_key = load_trial_key(home)
    url = f"http://{host}:{port}"
    store = Store(db_url) if db_url else Store.for_home(home)
    _make_store_private(home)
    make_private(home / "master.log")
    gpus = detect_gpus()
    n_slots = gpus or slots or os.cpu_count() or 1
    # The engine only hands its token to build_launch, which derives each trial's own token
    # from it: give it the trial key, never the admin token.
    engine = Engine(
        store, EngineSettings(home=home, slots=n_slots, gpus=gpus > 0), url, trial_key, mfile
    )
    server: uvicorn.Server | None = None

    def request_stop() -> None:
        if server is not None:
            server.should_exit = True

    app = create_app(
        store,
        engine,
        token,
        on_shutdown=request_stop,
        trial_key=trial_key,
        idle_timeout=idle_timeout,
    )
    tracker = _ActivityTracker(app)
    # A bounded graceful shutdown: after SIGTERM, requests still open after a few seconds (long
    # polls of trials that are gone) are cancelled instead of holding the master up.
    config = uvicorn.Config(
        tracker,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=3,
    )
    server = uvicorn.Server(config)
    engine.start()

    def announce() -> None:
        while not server.started:
            time.sleep(0.01)
        _write_master_file(
            mfile, {"url": url, "token": token, "pid": os.getpid(), "port": port, "slots": n_slots}
        )
        logger.info("master listening on %s with %d slots", url, n_slots)

    threading.Thread(target=announce, daemon=True).start()

    def busy() -> bool:
        """A trial runs, or a managed experiment still has work (restarts, stopping)."""
        if engine.running_trial_ids():
            return True
        # Paused experiments do not keep a master busy; those with trials to run or stop do.
        working = [s for s in ExperimentState if not s.terminal and s != ExperimentState.PAUSED]
        return any(not e.unmanaged for e in store.list_experiments(states=working))

    done = threading.Event()
    if idle_timeout > 0:
        threading.Thread(
            target=_stop_when_idle,
            args=(idle_timeout, tracker, busy, request_stop, done),
            name="trialkit-idle",
            daemon=True,
        ).start()
    try:
        server.run()
    finally:
        done.set()
        engine.stop()
        info = read_master_file(mfile)
        if info and info[1] == token:
            # Keep the port for the next master; drop the token so clients stop using it.
            _write_master_file(mfile, {"url": url, "token": "", "pid": None, "port": port})
        store.close()


def _previous_port(mfile: Path) -> int | None:
    try:
        return int(json.loads(mfile.read_text()).get("port") or 0) or None
    except (OSError, ValueError):
        return None


def client_for(home: Path, timeout: float = 30.0) -> MasterClient | None:
    """A client for the running master, or None when none answers."""
    found = read_master_file(master_file(home))
    if not found or not found[1]:
        return None
    client = MasterClient(found[0], found[1], master_file=str(master_file(home)), timeout=timeout)
    try:
        client.request("GET", "/api/v1/master", timeout=2.0)
    except Exception:
        client.close()
        return None
    return client


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
    cmd = [sys.executable, "-m", "trialkit.master", "--home", str(home)]
    if slots:
        cmd += ["--slots", str(slots)]
    cmd += ["--idle-timeout", repr(idle_timeout)]
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
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
    """Ask the running master to stop; True if one was running."""
    client = client_for(home)
    if client is None:
        return False
    pid = json.loads(master_file(home).read_text()).get("pid")
    try:
        client.request("POST", "/api/v1/master/shutdown")
    finally:
        client.close()
    deadline = time.monotonic() + wait
    while pid and time.monotonic() < deadline:
        if not _running(pid):
            return True
        time.sleep(0.05)
    if pid and _running(pid):
        os.kill(pid, signal.SIGKILL)
    return True


def _running(pid: int) -> bool:
    """Alive and not a zombie (an exited master its parent has not reaped yet)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
