"""The master process's interpreter settings for serving many trials at once: how often its
threads hand over the GIL, and how often the cyclic garbage collector runs and over what."""

from __future__ import annotations

import gc
import sys

#: Seconds a thread holds the GIL before handing it to a waiting one (CPython: 5 ms). The
#: event loop and the metric writer share the GIL: a thread coming back from the database
#: waits for the busy one to let go, a switch interval each time (several times per group
#: commit: the writer's latency was mostly that wait).
SWITCH_INTERVAL = 0.001

#: The collector's thresholds (CPython: 700, 10, 10). Metric reports wait as objects for
#: their group commit, and the commit's rows come in bursts of thousands: every 700 new
#: objects a collection promoted the waiting reports, until the oldest generation filled and
#: a full collection scanned the whole heap, often enough to be the p99 of report-to-stored
#: (bench/README.md: gc-thresholds). Collections every 20,000 find the reports already stored.
GC_THRESHOLDS = (20_000, 20, 10)


def tune_for_serving() -> None:
    """Apply the settings above; the objects made so far (modules, the app and its routes,
    never garbage) leave the collector's reach, so a full collection scans only newer ones."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
