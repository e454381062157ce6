"""The master's interpreter settings (``master/_runtime.py``) against the allocation pattern
of metric ingest: reports waiting as objects for their group commit, whose rows come in bursts.
Each case runs in its own interpreter: the settings are process-wide."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from trialkit.master._runtime import SWITCH_INTERVAL

# The master's own path for each message (the stream's parse, then the group commit's rows):
# deliveries accumulate until a commit of 200 of them builds its rows and frees them all.
INGEST = """
import gc, json, sys
from trialkit.master.api._metric_body import plain_stream_delivery
from trialkit.store._metric_writes import _metric_rows

if sys.argv[1] == "tuned":
    from trialkit.master._runtime import tune_for_serving
    tune_for_serving()
message = json.dumps({"run_id": 1, "sender": "s", "seq": 1, "reports": [
    {"group": "training", "steps_completed": i, "metrics": {"loss": 0.5, "sent": 1.0}}
    for i in range(10)]})
waiting = []
before = [s["collections"] for s in gc.get_stats()]
for i in range(20_000):
    waiting.append(plain_stream_delivery(1, message))
    if len(waiting) == 200:  # one group commit: 2,000 rows, then every delivery is answered
        rows = [row for d in waiting for row in _metric_rows(d.reports, 0.0)]
        waiting, rows = [], None
after = [s["collections"] for s in gc.get_stats()]
print(json.dumps({"collections": [a - b for a, b in zip(after, before)],
                  "frozen": gc.get_freeze_count(), "switch": sys.getswitchinterval()}))
"""


def _ingest(mode: str) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-c", INGEST, mode], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout)
    return result


@pytest.fixture(scope="module")
def tuned() -> dict[str, Any]:
    """One run of the tuned interpreter, for both tests."""
    return _ingest("tuned")


def test_ingest_makes_no_full_collection_in_the_tuned_master(tuned: dict[str, Any]) -> None:
    default = _ingest("default")
    # The pattern is one that costs full collections under CPython's defaults (each scans
    # every object the master has: ~200 ms at 200 trials) ...
    assert default["collections"][2] >= 1, default
    assert default["collections"][0] >= 100, default
    # ... and none once tuned: the deliveries are answered before a collection comes.
    assert tuned["collections"][2] == 0, tuned
    assert tuned["collections"][1] == 0, tuned
    assert tuned["collections"][0] <= 5, tuned


def test_startup_objects_leave_the_collectors_reach(tuned: dict[str, Any]) -> None:
    assert tuned["frozen"] > 10_000  # the modules' objects: a full collection skips them
    assert tuned["switch"] == SWITCH_INTERVAL == 0.001
