"""Serving a master: the server process and its 0600 master file. Finding, starting and
stopping one from the client side is ``trialkit.client._discovery``.

The master runs with umask 077, so everything it and its trials create under the home is
private to the user (docs/security.md)."""

from __future__ import annotations

import contextlib
import fcntl
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
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .._home import PRIVATE_FILE, PRIVATE_UMASK, ensure_private_dir, make_private
from ..client import check_slots, master_file, read_master_file

logger = logging.getLogger("trialkit.master")

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _ActivityTracker:
    """ASGI wrapper that notes when the last API call (any but /health) arrived or ended, and
    how many are open: an open event stream (a web UI page) or long poll is activity too."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.last = time.monotonic()
        self.open = 0  # changed on the event loop only; the idle thread just reads it

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") == "/health":
            await self.app(scope, receive, send)
            return
        self.last = time.monotonic()
        self.open += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1
            self.last = time.monotonic()


def _stop_when_idle(
    timeout: float, tracker: _ActivityTracker, busy: Any, stop: Any, done: threading.Event
) -> None:
    """Call ``stop`` once ``timeout`` s pass while not ``busy()``, with no API call open and
    none arriving."""
    while not done.wait(min(timeout / 4, 5.0)):
        now = time.monotonic()
        if tracker.open or busy():
            tracker.last = now
        elif now - tracker.last >= timeout:
            logger.info(
                "idle for %.0f s (no running trial, no experiment with work left, no API call "
                "or open event stream): stopping",
                timeout,
            )
            stop()
            return


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


def _hold_home_lock(home: Path) -> IO[str]:
    """One master per home: an exclusive lock on ``master.lock``, held while this process lives
    (the kernel drops it however the process ends; trials do not inherit it). A second master,
    e.g. started by a command that found the first too busy to answer, exits with one line
    instead of adopting the first one's trials beside it."""
    lock = open(home / "master.lock", "a+")  # noqa: SIM115 (held until the process ends)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "unknown"
        lock.close()
        sys.exit(
            f"MasterError: another master is running for {home} (pid {holder}) but did not"
            " answer; wait for it, or stop it with 'trialkit master down'"
        )
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock


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
    config_file: Path | None = None,
) -> None:
    """Run a master in this process until SIGTERM/SIGINT, an API shutdown, or ``idle_timeout``
    seconds with no running trial, no managed experiment with work left and no API call
    (0: never). ``config_file`` is the master config (default: $TRIALKIT_HOME/master.yaml)."""
    check_slots(slots)
    from ..config import load_master_config, master_config_path

    master_config = load_master_config(master_config_path(home, config_file))
    # Here, not at import: `import trialkit.master` (the master's API and tests) stays fast.
    import uvicorn

    from ..store import ExperimentState, Store, StoreError
    from ._runtime import tune_for_serving
    from .api._app import create_app
    from .api._auth import load_trial_key
    from .api._metrics import STREAM_MAX_BYTES
    from .engine._engine import Engine, EngineSettings

    # Everything this process and the trials it starts create is private to the user.
    os.umask(PRIVATE_UMASK)
    ensure_private_dir(home)
    home_lock = _hold_home_lock(home)
    mfile = master_file(home)
    previous = _previous_port(mfile)
    port = _free_port(previous, host)
    token = secrets.token_urlsafe(32)
    trial_key = load_trial_key(home)
    url = f"http://{host}:{port}"
    try:
        store = Store(db_url) if db_url else Store.for_home(home)
    except StoreError as e:  # e.g. a store made by a newer trialkit: one line, no traceback
        sys.exit(f"StoreError: {e}")
    _make_store_private(home)
    make_private(home / "master.log")
    gpus = detect_gpus()
    n_slots = gpus or slots or os.cpu_count() or 1
    # The engine only hands its token to build_launch, which derives each trial's own token
    # from it: give it the trial key, never the admin token.
    settings = EngineSettings(home=home, slots=n_slots, gpus=gpus > 0, master_config=master_config)
    engine = Engine(store, settings, url, trial_key, mfile)
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
        ws="websockets-sansio",  # the metric stream (the Core API's reports)
        ws_max_size=STREAM_MAX_BYTES,
        # No keepalive pings: a trial reads its stream only while it sends a batch, so a quiet
        # one would miss the pong's deadline and be cut off; a dead trial's socket just closes.
        ws_ping_interval=None,
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
        working = [s for s in ExperimentState if not s.ended and s != ExperimentState.PAUSED]
        return any(not e.unmanaged for e in store.list_experiments(states=working))

    done = threading.Event()
    if idle_timeout > 0:
        threading.Thread(
            target=_stop_when_idle,
            args=(idle_timeout, tracker, busy, request_stop, done),
            name="trialkit-idle",
            daemon=True,
        ).start()
    tune_for_serving()
    try:
        with _signals_end_the_server_only():
            server.run()
    finally:
        done.set()
        engine.stop()
        info = read_master_file(mfile)
        if info and info[1] == token:
            # Keep the port for the next master; drop the token so clients stop using it.
            _write_master_file(mfile, {"url": url, "token": "", "pid": None, "port": port})
        store.close()
        home_lock.close()


@contextlib.contextmanager
def _signals_end_the_server_only() -> Iterator[None]:
    """uvicorn stops gracefully on SIGTERM/SIGINT and then raises the signal again into the
    handlers it found: the default ones would kill the process (SIGTERM) or raise
    KeyboardInterrupt (SIGINT) before serve() cleans up. Hand it handlers that do nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    found = {sig: signal.signal(sig, lambda signum, frame: None) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in found.items():
            signal.signal(sig, handler)


def _previous_port(mfile: Path) -> int | None:
    try:
        return int(json.loads(mfile.read_text()).get("port") or 0) or None
    except (OSError, ValueError):
        return None
