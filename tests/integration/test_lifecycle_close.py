"""A trial the searcher closed, whose process exits for a pause, completes (regression: it came
back ACTIVE on activate, with nothing left to train and never closed in the search, so the
experiment stayed ACTIVE forever)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Master, write_script

pytestmark = pytest.mark.integration

# 0.37: completes its one operation, then waits to be preempted (the pause) before exiting.
TRIAL = """
import time
from trialkit import core

with core.init() as ctx:
    for op in ctx.searcher.operations():
        ctx.train.report_validation_metrics(steps_completed=op.length, metrics={"loss": 0.5})
        op.report_completed(0.5)
    print("operation done; waiting for the pause", flush=True)
    while not ctx.preempt.should_preempt():
        time.sleep(0.05)
    print("preempted", flush=True)
"""


def test_closed_trial_that_exits_for_a_pause_completes(master: Master, tmp_path: Path) -> None:
    d = tmp_path / "m"
    write_script(d, "trial.py", TRIAL)
    exp = master.create(
        {
            "name": "close-then-pause",
            "entrypoint": "python3 trial.py",
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 4}},
        },
        d,
    )

    def trial() -> dict:
        trials = master.describe(exp)["trials"]
        return trials[0] if trials else {}

    master.wait_for(
        lambda: trial().get("op_complete") is True and trial().get("pid") is not None,
        timeout=60,
        what="the trial's operation completed while its process runs",
    )
    master.cli("experiment", "pause", str(exp))
    master.wait_for(lambda: trial().get("pid") is None, timeout=30, what="the process exited")
    master.cli("experiment", "activate", str(exp))
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=30)
    assert desc["experiment"]["state"] == "COMPLETED"
    assert [t["state"] for t in desc["trials"]] == ["COMPLETED"]
