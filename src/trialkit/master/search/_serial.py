"""One experiment's searcher calls, made one at a time in the order they were told, on a thread
of its own: a custom searcher's process may take up to its call timeout to answer, and only its
own experiment may wait for it (``_driver`` applies each answer under the engine's lock)."""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

logger = logging.getLogger("trialkit.master")

Job = Callable[[], None]


class SerialCalls:
    """A FIFO of jobs and the thread that runs them; ``release`` runs on that thread at the end."""

    def __init__(self, name: str, interrupt: Callable[[], None], release: Callable[[], None]):
        self._interrupt = interrupt
        self._release = release
        self._cond = threading.Condition()
        self._jobs: collections.deque[tuple[Job, threading.Event]] = collections.deque()
        self._running = False
        self.closed = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> threading.Event:
        """Queue ``job`` after those told before; the event is set once it ran (or was dropped)."""
        done = threading.Event()
        with self._cond:
            if self.closed:
                done.set()
                return done
            self._jobs.append((job, done))
            self._cond.notify()
        return done

    @property
    def busy(self) -> bool:
        """Whether a job runs or waits: the search has events it has not answered yet."""
        with self._cond:
            return self._running or bool(self._jobs)

    def close(self) -> None:
        """Drop the jobs not started, interrupt the running one; never waits for the thread
        (the caller may hold the lock a running job is about to take)."""
        with self._cond:
            self.closed = True
            dropped, self._jobs = self._jobs, collections.deque()
            running = self._running
            self._cond.notify()
        for _, done in dropped:
            done.set()
        if running:
            self._interrupt()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self.closed:
                    self._cond.wait()
                if self.closed:
                    break
                job, done = self._jobs.popleft()
                self._running = True
            try:
                job()
            except Exception:  # a store error: the job's events wait for a restart's recovery
                logger.exception("%s: a searcher call failed", self._thread.name)
            finally:
                with self._cond:
                    self._running = False
                done.set()
        self._release()
