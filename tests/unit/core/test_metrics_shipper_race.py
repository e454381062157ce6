"""The shipper's count of undelivered reports is shared by two threads: ``put()`` adds on the
training thread, the shipping thread subtracts what it delivered, and ``flush()`` waits for zero.

The interleaving that loses an update is forced, not waited for: the count is an ``int`` whose
addition (``put``) pauses between reading the old value and writing the new one until the
shipping thread has either written its own result (it then sends the progress) or is seen
waiting for the count's lock. Without a lock, ``put`` then writes over the shipping thread's
subtraction and ``flush()`` waits forever for a report that was delivered long ago. With the
lock, the shipping thread cannot subtract in the middle of an addition: the pause ends as soon
as it is seen waiting, and the count stays right."""

from __future__ import annotations

import threading
import time
from typing import Any

from trialkit.core._backend import TrialBackend
from trialkit.core._metrics import MetricsShipper


class GatedMaster(TrialBackend):
    """Records metrics and progress; holds the first batch in flight until ``release`` is set."""

    def __init__(self) -> None:
        self.reports: list[dict[str, Any]] = []
        self.sending = threading.Event()
        self.release = threading.Event()
        self.progress_sent = threading.Event()

    def ship_metrics(self, reports: list[dict[str, Any]]) -> None:
        self.sending.set()
        assert self.release.wait(30), "the test never released the first batch"
        self.reports.extend(reports)

    def report_progress(self, value: float, *, raw: bool) -> None:
        self.progress_sent.set()

    # The rest of a trial's calls; the shipper makes none of them.
    def report_checkpoint(self, record: dict[str, Any]) -> None: ...
    def checkpoint_metadata(self, uuid: str) -> dict[str, Any] | None:
        return None

    def delete_checkpoint(self, uuid: str) -> None: ...
    def preemption_requested(self, timeout: float) -> bool:
        return False

    def ack_preemption(self) -> None: ...
    def searcher_operation(self) -> tuple[int | None, bool]:
        return None, True

    def complete_operation(self, length: int, metric: Any) -> None: ...
    def set_status(self, status: str) -> None: ...
    def report_early_exit(self, reason: str) -> None: ...
    def best_validation(self) -> float | None:
        return None

    def last_validation(self) -> int | None:
        return None


class WatchedLock:
    """The shipper's count lock, telling when a thread has to wait for it."""

    def __init__(self, lock: Any) -> None:
        self._lock = lock
        self.contended = threading.Event()

    def __enter__(self) -> WatchedLock:
        if not self._lock.acquire(blocking=False):
            self.contended.set()
            self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


class Interleaving:
    """The steps of the forced interleaving, as events between the two threads."""

    def __init__(self, master: GatedMaster, lock: WatchedLock) -> None:
        self.training_read = threading.Event()  # put() has read the old count
        self.master = master
        self.lock = lock

    def shipping_thread_wrote_or_waits(self, timeout: float) -> bool:
        """Wait until the shipping thread wrote its subtraction (it then sends the progress)
        or waits for the count's lock; False if neither happened within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while not (self.master.progress_sent.is_set() or self.lock.contended.is_set()):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True


def pausing_count(script: Interleaving, value: int) -> int:
    """``value`` as a count whose increments wait for the shipping thread (see module doc)."""

    class PausingCount(int):
        def __add__(self, other: int) -> PausingCount:
            if other > 0:  # put(): a report queued, on the training thread
                script.training_read.set()
                assert script.shipping_thread_wrote_or_waits(30), "the batch was never delivered"
            return PausingCount(int(self) + other)

        def __sub__(self, other: int) -> PausingCount:
            return PausingCount(int(self) - other)

    return PausingCount(value)


def report(step: int) -> dict[str, Any]:
    return {"group": "training", "steps_completed": step, "metrics": {"loss": 1.0 / step}}


def test_a_report_queued_while_a_batch_is_delivered_is_counted_once() -> None:
    master = GatedMaster()
    shipper = MetricsShipper(master, interval=0.01)
    shipper._count_lock = lock = WatchedLock(shipper._count_lock)  # type: ignore[assignment]
    script = Interleaving(master, lock)
    try:
        shipper.put(report(1))  # the first report goes out at once and is held in flight
        assert master.sending.wait(30), "the first report was never sent"
        shipper.set_progress(0.5, raw=False)  # sent by the shipping thread after the batch
        shipper._undelivered = pausing_count(script, shipper._undelivered)

        second = threading.Thread(target=shipper.put, args=(report(2),), daemon=True)
        second.start()
        assert script.training_read.wait(30), "put() never updated the count"
        master.release.set()
        second.join(60)
        assert not second.is_alive(), "put() did not return"

        flushed = threading.Event()

        def flush() -> None:
            shipper.flush()
            flushed.set()

        threading.Thread(target=flush, daemon=True).start()
        assert flushed.wait(10), (
            f"flush() never returned: both reports were delivered ({len(master.reports)}) but "
            f"the shipper still counts {int(shipper._undelivered)} undelivered"
        )
        assert [r["steps_completed"] for r in master.reports] == [1, 2]
        assert shipper._undelivered == 0
    finally:
        master.release.set()
        shipper.close()
