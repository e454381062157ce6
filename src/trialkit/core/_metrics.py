"""Background metric shipping: reporting appends to a queue and returns; a daemon thread sends
batches, retrying with backoff while the master is away. Nothing is dropped: ``close()`` drains
the queue and raises if reports could not be delivered. A shipping error is re-raised on the
next report.

Progress travels the same way, latest value wins: a training loop that reports progress every
few batches must not wait for a database write or an HTTP round trip each time
(bench/README.md: progress-sync)."""

from __future__ import annotations

import collections
import logging
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import APIError
from ..rest import MetricsStored, metric_name_error, metric_names_error
from ._backend import MetricSink, TrialBackend

logger = logging.getLogger("trialkit.core")


def _transient(e: APIError) -> bool:
    """Errors a later attempt can cure: a master restarting (new token) or overloaded."""
    return e.status == 401 or e.status >= 500


class MetricsShipper:
    """Owns the queue between the training loop and the backend.

    Each batch carries this shipper's random ``sender`` id and a sequence number, the same on
    every resend of it, so a master that stored a batch but died before replying stores it once.

    Over the master's stream a batch is sent without waiting for its answer: answers are read
    on later rounds, and a broken stream sends every unanswered batch again. Waiting for each
    answer cost a trial a second wake-up per batch (bench/README.md: shipper-wakeup).
    """

    BATCH = 5000
    #: Batches sent and not yet answered, at most; the shipper waits for answers beyond. One:
    #: a master falling behind then gets fewer, larger batches (bench/README.md: shipper-window).
    WINDOW = 1
    #: Seconds between rounds while no report waits (progress goes out on a round).
    IDLE_ROUND = 0.25

    def __init__(
        self,
        backend: TrialBackend,
        *,
        interval: float | None = None,
        drain_timeout: float = 300.0,
    ) -> None:
        """``interval``: the least time between batches; by default the backend's
        ``metrics_interval`` (shorter where a batch is cheap to send)."""
        self._backend = backend  # progress goes to the backend itself
        self._sink: MetricSink = backend  # batches go through the one metric path
        self._sinks: list[Callable[[list[dict[str, Any]]], None]] = []
        self._for_sinks: list[dict[str, Any]] = []  # delivered, not yet handed to the sinks
        self._sinks_due = 0.0  # monotonic time the sinks are next handed what was delivered
        self._queue: collections.deque[dict[str, Any]] = collections.deque()
        self._interval = interval
        self._drain_timeout = drain_timeout
        self._wake = threading.Event()  # work for an idle thread
        self._hurry = threading.Event()  # flush() or close(): stop letting reports gather
        self._idle = False  # the thread waits for reports (put() then wakes it)
        self._flushes = 0  # flush() calls waiting
        self._closing = False
        self._error: BaseException | None = None
        # Queued or in flight; flush() waits for zero. put() adds on the training thread and the
        # shipping thread subtracts: every update goes through _count, under _count_lock.
        self._undelivered = 0
        self._count_lock = threading.Lock()
        # Notified by the thread at every round and when it ends: flush() waits on it (polling
        # took the CPU the master needed to catch up: bench/README.md, flush-poll).
        self._round_done = threading.Condition(self._count_lock)
        self._stopped = False  # the thread ended
        self._progress: tuple[float, bool] | None = None  # newest unsent (value, raw)
        self._progress_version = 0  # bumped per set_progress
        self._progress_sent = 0  # the version delivered; a failed one is retried next round
        self._progress_tried = 0  # the version last attempted; flush() waits for an attempt
        self.shipped = 0
        #: The master's "is it the best validation?" per steps_completed of the validations in
        #: the newest batch that held any; read (and forgotten) by ``is_best_validation``.
        self._best_verdicts: dict[int, bool] = {}
        self.sender = secrets.token_hex(8)
        self._seq = 0  # the number of the newest batch taken from the queue
        # (seq, size) of batches put back at the queue's front to go again, oldest first.
        self._resends: collections.deque[tuple[int, int]] = collections.deque()
        self._in_flight: dict[int, list[dict[str, Any]]] = {}  # sent, not answered, by seq
        self._retry_delay = self.FIRST_RETRY
        self._last_batch = -float("inf")  # monotonic time the newest batch went out
        self._thread = threading.Thread(target=self._run, name="trialkit-metrics", daemon=True)
        self._thread.start()

    #: Seconds before resending after a failure; doubled per failure in a row, up to MAX_RETRY.
    FIRST_RETRY = 0.05
    MAX_RETRY = 5.0

    #: Seconds delivered reports may wait to be handed to the sinks together: a sink's cost is
    #: mostly per call (the TensorBoard writer's checksums), and batches go every 50 ms.
    SINK_INTERVAL = 1.0

    def add_sink(self, sink: Callable[[list[dict[str, Any]]], None]) -> None:
        """Also hand delivered reports to ``sink`` (on the shipping thread): at most a
        ``SINK_INTERVAL`` after their delivery, and all of them by ``close()``."""
        self._sinks.append(sink)

    def _hand_to_sinks(self, now: bool = False) -> None:
        if not self._for_sinks or not (now or time.monotonic() >= self._sinks_due):
            return
        delivered, self._for_sinks = self._for_sinks, []
        self._sinks_due = time.monotonic() + self.SINK_INTERVAL
        for sink in self._sinks:
            sink(delivered)

    def put(self, report: dict[str, Any]) -> None:
        """Queue one report; never blocks on the network. A metric name the master would
        refuse raises here, in the trial's script, rather than stopping the shipping later."""
        error = metric_name_error(report["metrics"]) or metric_names_error(
            report.get("batch_metrics") or ()
        )
        if error is not None:
            raise ValueError(
                f"{report['group']} metrics at step {report['steps_completed']}: {error}"
            )
        if self._closing:
            raise RuntimeError("cannot report metrics after the core context was closed")
        if self._error is not None:
            self._raise_error()
        self._count(1)
        self._queue.append(report)
        if self._idle:
            # Nothing was queued: the thread sends this one as soon as the interval since the
            # last batch allows (the very first at once: "is it running?"). Once per idle
            # spell: the rest of a burst finds the flag down and skips the Event's lock, which
            # the waking thread contends for (each report paid for a wake-up it did not need).
            self._idle = False
            self._wake.set()

    def _count(self, change: int) -> int:
        """Add ``change`` to the undelivered count; the new count."""
        with self._count_lock:
            self._undelivered += change
            return self._undelivered

    def set_progress(self, value: float, raw: bool) -> None:
        """Record the trial's progress; the thread sends the newest value on its next round."""
        if self._closing:
            raise RuntimeError("cannot report progress after the core context was closed")
        self._progress = (value, raw)
        self._progress_version += 1

    def _send_progress(self) -> None:
        version, pending = self._progress_version, self._progress
        if pending is None or version == self._progress_sent:
            return
        try:
            self._backend.report_progress(pending[0], raw=pending[1])
            self._progress_sent = version
        except Exception as e:  # a display value: retried next round, never fails the trial
            if self._closing:
                logger.warning(
                    "the trial's last progress (%s) was not delivered: %s", pending[0], e
                )
            else:
                logger.debug("progress not delivered yet (%s); retrying", e)
        finally:
            self._progress_tried = version

    def _raise_error(self) -> None:
        err, self._error = self._error, None
        raise RuntimeError(f"shipping metrics to the master failed: {err}") from err

    def _take_batch(self) -> tuple[int, list[dict[str, Any]]]:
        """The next batch and its number: a batch put back goes again, with the same number."""
        if self._resends:
            seq, size = self._resends.popleft()
        else:
            self._seq += 1
            seq, size = self._seq, self.BATCH
        batch: list[dict[str, Any]] = []
        q = self._queue
        while q and len(batch) < size:
            batch.append(q.popleft())
        return seq, batch

    def _put_back(self, batches: list[tuple[int, list[dict[str, Any]]]]) -> None:
        """Put ``batches`` (oldest first) back at the queue's front, to go again as they were."""
        for _, batch in reversed(batches):
            self._queue.extendleft(reversed(batch))
        self._resends.extendleft(reversed([(seq, len(batch)) for seq, batch in batches]))

    def _delivered(self, batch: list[dict[str, Any]], reply: MetricsStored) -> None:
        if reply.is_best_validation is not None:  # only the newest batch's are kept: bounded
            validations = [r["steps_completed"] for r in batch if r["group"] == "validation"]
            self._best_verdicts = dict(zip(validations, reply.is_best_validation, strict=False))
        if self._sinks:
            self._for_sinks.extend(batch)
        self.shipped += len(batch)
        self._count(-len(batch))
        self._retry_delay = self.FIRST_RETRY

    def _refused(self, batch: list[dict[str, Any]], e: APIError) -> None:
        """The master refused the data itself: retrying cannot help."""
        logger.error("the master rejected %d metric reports: %s", len(batch), e)
        self._count(-len(batch))
        self._error = e

    def _back_off(self, why: object) -> None:
        logger.warning("metrics not delivered yet (%s); retrying in %.1fs", why, self._retry_delay)
        time.sleep(self._retry_delay)
        self._retry_delay = min(self._retry_delay * 2, self.MAX_RETRY)

    def _send(self, seq: int, batch: list[dict[str, Any]]) -> None:
        """Send one batch, retrying transient failures until ``drain_timeout``; delivered now,
        or in flight. Raises APIError for a refusal, anything else once the time is up."""
        deadline = time.monotonic() + self._drain_timeout
        while True:
            try:
                reply = self._sink.send_metric_batch(batch, self.sender, seq)
                if reply is None:
                    self._in_flight[seq] = batch
                else:
                    self._delivered(batch, reply)
                return
            except APIError as e:
                if not _transient(e) or time.monotonic() > deadline:
                    raise
                self._back_off(e)
            except Exception as e:  # connection trouble: wait for the master to come back
                self._resend_in_flight()  # they went with the connection
                if time.monotonic() > deadline:
                    raise
                self._back_off(e)

    def _resend_in_flight(self) -> None:
        if self._in_flight:
            batches = sorted(self._in_flight.items())
            self._in_flight.clear()
            self._put_back(batches)

    def _settle(self, wait: bool) -> None:
        """Take in the answers to batches in flight that came (with ``wait``: at least one)."""
        if not self._in_flight:
            return
        try:
            outcomes = self._sink.metric_outcomes(wait)
        except Exception as e:  # the stream broke: every batch in flight goes again
            self._resend_in_flight()
            self._back_off(e)
            return
        if wait and not outcomes:  # the backend lost track of them: they go again
            self._resend_in_flight()
            return
        for seq, outcome in outcomes:
            batch = self._in_flight.pop(seq, None)
            if batch is None:
                continue  # not this shipper's (or answered twice): nothing to settle
            if not isinstance(outcome, Exception):
                self._delivered(batch, outcome)
            elif isinstance(outcome, APIError) and not _transient(outcome):
                self._refused(batch, outcome)
            else:  # e.g. the store failed for a moment (503): this one goes again
                self._put_back([(seq, batch)])
                self._back_off(outcome)

    def _run(self) -> None:
        try:
            self._sink.prepare_metrics()
        except Exception as e:  # the first batch meets the same trouble and retries it
            logger.debug("preparing to ship metrics failed: %s", e)
        try:
            self._rounds()
        finally:
            self._stopped = True
            self._end_round()

    def _end_round(self) -> None:
        with self._round_done:
            self._round_done.notify_all()

    def _rounds(self) -> None:
        while True:
            self._end_round()
            urgent = self._closing or self._flushes > 0
            if urgent and not self._queue:
                self._settle(wait=True)
                if self._closing and not self._queue and not self._in_flight:
                    self._send_progress()
                    self._hand_to_sinks(now=True)
                    return
            if not self._queue and not self._closing and not (urgent and self._in_flight):
                # Idle: a report wakes the thread; answers, progress and the sinks wait for a
                # round.
                self._idle = True
                if not self._queue:
                    self._wake.wait(max(self._interval_now(), self.IDLE_ROUND))
                self._idle = False
                self._wake.clear()
            # Let reports gather for what is left of the interval since the last batch: one
            # request per report would cost the master (and the GIL) far more than reporting.
            wait = self._last_batch + self._interval_now() - time.monotonic()
            if wait > 0 and len(self._queue) < self.BATCH and not urgent:
                self._hurry.wait(wait)
            self._settle(wait=len(self._in_flight) >= self.WINDOW)
            if self._queue:
                self._last_batch = time.monotonic()
                self._ship_batch()
                if self._closing and self._error is not None:
                    self._hand_to_sinks(now=True)
                    return  # undeliverable: close() raises with what is left
            self._send_progress()
            self._hand_to_sinks()

    def _interval_now(self) -> float:
        return self._interval if self._interval is not None else self._sink.metrics_interval

    def _ship_batch(self) -> None:
        seq, batch = self._take_batch()
        try:
            self._send(seq, batch)
        except APIError as e:
            self._refused(batch, e)
        except BaseException as e:  # still unreachable after the timeout: keep the data
            self._put_back([(seq, batch)])  # it may have been stored: same number next time
            self._resend_in_flight()
            self._error = e

    def flush(self) -> None:
        """Wait until everything queued so far, and the newest progress, has been delivered."""
        with self._count_lock:
            self._flushes += 1
        self._hurry.set()
        self._wake.set()
        version = self._progress_version
        try:
            with self._round_done:
                while (
                    (self._undelivered > 0 or self._progress_tried < version)
                    and self._error is None
                    and not self._stopped
                ):
                    self._round_done.wait()
        finally:
            with self._count_lock:
                self._flushes -= 1
                if not self._flushes and not self._closing:
                    self._hurry.clear()
        if self._error is not None:
            self._raise_error()

    def is_best_validation(self, steps_completed: int) -> bool | None:
        """The master's answer for the validation reported at ``steps_completed``, once its batch
        was delivered (after ``flush()``, and before a later batch with validations); None when
        no answer came (a batch the master had stored before: its reply is a duplicate's)."""
        return self._best_verdicts.pop(steps_completed, None)

    def close(self) -> None:
        """Drain the queue and stop the thread; raise if reports could not be delivered."""
        self._closing = True
        self._hurry.set()
        self._wake.set()
        self._thread.join()
        if self._error is not None:
            left = len(self._queue)
            err = self._error
            self._error = None
            raise RuntimeError(f"{left} metric reports could not be delivered: {err}") from err
