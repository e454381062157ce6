"""Group commit of metric reports: one writer thread stores every batch waiting in one
transaction. Many trials reporting at once then cost one commit per round instead of one per
request, and never wait on each other for SQLite's write lock (whose busy handler's sleeps were
the tail of report-to-stored latency under load: bench/README.md, group-commit)."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time

from ...store import Delivered, MetricDelivery, Store

logger = logging.getLogger(__name__)

_Item = tuple[MetricDelivery, "asyncio.Future[Delivered]"]
_Outcome = Delivered | Exception


class MetricIngest:
    """Stores deliveries from event loops; the writer thread starts on the first one and ends
    after ``idle_exit`` seconds without work (an app needs no shutdown)."""

    #: Rows one transaction takes at most; more waiting go in the next.
    MAX_ROWS = 20_000
    #: Seconds the writer lets more batches arrive before a commit: a transaction costs far
    #: more than a batch in it (bench/README.md: group-commit).
    LINGER = 0.005

    def __init__(self, store: Store, *, idle_exit: float = 0.5) -> None:
        self._store = store
        self._idle_exit = idle_exit
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._writer: threading.Thread | None = None

    async def deliver(self, delivery: MetricDelivery) -> Delivered:
        """Store ``delivery`` in the next group commit; what became of it."""
        future: asyncio.Future[Delivered] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._queue.put((delivery, future))
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._run, name="trialkit-metric-writer", daemon=True
                )
                self._writer.start()
        return await future

    def _run(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=self._idle_exit)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():
                        self._writer = None
                        return
                continue
            time.sleep(self.LINGER)
            group = self._group(first)
            _settle(group, self._write(group))

    def _group(self, first: _Item) -> list[_Item]:
        """``first`` and what else is waiting, up to MAX_ROWS rows."""
        group, rows = [first], len(first[0].reports)
        while rows < self.MAX_ROWS:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            group.append(item)
            rows += len(item[0].reports)
        return group

    def _write(self, group: list[_Item]) -> list[_Outcome]:
        """Each delivery's outcome, or the exception that kept it from being stored."""
        try:
            return list(self._store.add_metric_deliveries([d for d, _ in group]))
        except Exception as e:
            if len(group) > 1:  # one bad batch must not fail the others: each on its own
                return [outcome for item in group for outcome in self._write([item])]
            logger.warning("storing a metric batch of trial %d failed: %s", group[0][0].trial_id, e)
            return [e]


def _settle(group: list[_Item], outcomes: list[_Outcome]) -> None:
    """Hand the outcomes to the waiting coroutines: one call into each event loop per group
    (a call per future wrote to the loop's wake-up pipe for every batch: bench/README.md,
    group-commit)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Delivered], _Outcome]]]
    by_loop = {}
    for (_, future), outcome in zip(group, outcomes, strict=True):
        by_loop.setdefault(future.get_loop(), []).append((future, outcome))
    for loop, pairs in by_loop.items():
        try:
            loop.call_soon_threadsafe(_set_outcomes, pairs)
        except RuntimeError:  # the loop closed (a test's app went away): nobody is waiting
            pass


def _set_outcomes(pairs: list[tuple[asyncio.Future[Delivered], _Outcome]]) -> None:
    for future, outcome in pairs:
        if future.done():  # cancelled: its connection went away while it was being stored
            continue
        if isinstance(outcome, Exception):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
