"""Group commit of metric reports: one writer thread stores every batch waiting in one
transaction. Many trials reporting at once then cost one commit per round instead of one per
request, and never wait on each other for SQLite's write lock (whose busy handler sleeps up to
100 ms between tries: the tail of report-to-stored latency under load)."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from concurrent.futures import Future

from ..store import Delivered, MetricDelivery, Store

logger = logging.getLogger(__name__)

_Item = tuple[MetricDelivery, "Future[Delivered]"]


class MetricIngest:
    """Stores deliveries from any thread or the event loop; the writer thread starts on the
    first one and ends after ``idle_exit`` seconds without work (an app needs no shutdown)."""

    #: Rows one transaction takes at most; more waiting go in the next.
    MAX_ROWS = 20_000
    #: Seconds the writer lets more batches arrive before a commit: a transaction costs far
    #: more than a batch in it, and 200 trials' batches every 50 ms then share ~200 commits/s.
    LINGER = 0.005

    def __init__(self, store: Store, *, idle_exit: float = 0.5) -> None:
        self._store = store
        self._idle_exit = idle_exit
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._writer: threading.Thread | None = None

    async def deliver(self, delivery: MetricDelivery) -> Delivered:
        """Store ``delivery`` in the next group commit; what became of it."""
        return await asyncio.wrap_future(self.submit(delivery))

    def submit(self, delivery: MetricDelivery) -> Future[Delivered]:
        future: Future[Delivered] = Future()
        with self._lock:
            self._queue.put((delivery, future))
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._run, name="trialkit-metric-writer", daemon=True
                )
                self._writer.start()
        return future

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
            self._write(self._group(first))

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

    def _write(self, group: list[_Item]) -> None:
        try:
            outcomes = self._store.add_metric_deliveries([d for d, _ in group])
        except Exception as e:
            if len(group) > 1:  # one bad batch must not fail the others: each on its own
                for item in group:
                    self._write([item])
                return
            logger.warning("storing a metric batch of trial %d failed: %s", group[0][0].trial_id, e)
            group[0][1].set_exception(e)
            return
        for (_, future), outcome in zip(group, outcomes, strict=True):
            future.set_result(outcome)
