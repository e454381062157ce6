"""PreemptContext: tells the training loop when to checkpoint and exit (pause, searcher stop,
kill), from the master's signal or a SIGTERM to the process."""

from __future__ import annotations

import enum
import logging
import signal
import threading
import time
from types import FrameType
from typing import Any

from ._backend import TrialBackend
from ._distributed import DistributedContext

logger = logging.getLogger("trialkit.core")


class PreemptMode(enum.Enum):
    """Who calls ``should_preempt()`` and how ranks agree on its answer."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"
    WorkersAskMaster = "WORKERS_ASK_MASTER"


class _Watcher(threading.Thread):
    """Long-polls the master; once preemption is requested it stays requested."""

    def __init__(self, backend: TrialBackend, poll_timeout: float) -> None:
        super().__init__(name="trialkit-preempt", daemon=True)
        self._backend = backend
        self._poll_timeout = poll_timeout
        self.requested = threading.Event()
        self.first_answer = threading.Event()
        self._stop_event = threading.Event()

    def run(self) -> None:
        timeout = 0.0
        while not self._stop_event.is_set() and not self.requested.is_set():
            try:
                if self._backend.preemption_requested(timeout):
                    self.requested.set()
            except Exception as e:  # master away: treat as "not preempted" and retry
                logger.debug("preemption poll failed: %s", e)
                self.first_answer.set()
                self._stop_event.wait(1.0)
            finally:
                self.first_answer.set()
            timeout = self._poll_timeout

    def stop(self) -> None:
        self._stop_event.set()


class PreemptContext:
    """``should_preempt()`` turns True once the master (or SIGTERM) asks the trial to stop."""

    def __init__(
        self,
        backend: TrialBackend,
        dist: DistributedContext,
        preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
        *,
        poll_timeout: float = 60.0,
        watch_master: bool = True,
    ) -> None:
        self._backend = backend
        self._dist = dist
        self.mode = preempt_mode
        self._poll_timeout = poll_timeout
        self._watch_master = watch_master
        self._watcher: _Watcher | None = None
        self._sigterm = threading.Event()
        self._previous_handler: Any = None
        self._acked = False
        self._started = False

    def start(self) -> None:
        if self._started:
            raise RuntimeError("PreemptContext.start() called twice")
        self._started = True
        asks_master = self._dist.rank == 0 or self.mode == PreemptMode.WorkersAskMaster
        if self._watch_master and asks_master:
            self._watcher = _Watcher(self._backend, self._poll_timeout)
            self._watcher.start()
        self._install_sigterm_handler()

    def _install_sigterm_handler(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        logger.info("SIGTERM received: the trial will stop at its next should_preempt() check")
        self._sigterm.set()

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        if self._previous_handler is not None:
            signal.signal(signal.SIGTERM, self._previous_handler)
            self._previous_handler = None

    def _local_answer(self) -> bool:
        if self._sigterm.is_set():
            return True
        if self._watcher is None:
            return False
        if not self._watcher.first_answer.is_set():
            self._watcher.first_answer.wait(timeout=30.0)
        return self._watcher.requested.is_set()

    def should_preempt(self, auto_ack: bool = True) -> bool:
        """Whether to checkpoint and exit now; acks the first True unless ``auto_ack=False``."""
        if not self._started:
            raise RuntimeError("should_preempt() called before the core context was entered")
        if self.mode == PreemptMode.ChiefOnly and self._dist.rank != 0:
            raise RuntimeError("should_preempt() in ChiefOnly mode may only be called by the chief")
        if self.mode == PreemptMode.WorkersAskChief and self._dist.size > 1:
            answer = bool(
                self._dist.broadcast(self._local_answer() if self._dist.rank == 0 else None)
            )
        else:
            answer = self._local_answer()
        if answer and auto_ack and self._dist.rank == 0:
            self.acknowledge_preemption_signal()
        return answer

    def acknowledge_preemption_signal(self) -> None:
        """Tell the master the exit is on request: the trial expects to be resumed later."""
        if self._acked:
            return
        self._backend.ack_preemption()
        self._acked = True

    def wait_for_signal(self, timeout: float) -> bool:
        """Block up to ``timeout`` s for a preemption request (used by tests and tools)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._local_answer():
                return True
            time.sleep(0.05)
        return False
