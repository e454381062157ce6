"""The dedupe keys of metric batches do not pile up: when a run ends the master deletes its
rows from ``metric_batches`` (a process that exited cannot resend), keeping the metrics."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ._scripts import run_two_trials
from .conftest import Master

pytestmark = pytest.mark.integration


def test_ended_runs_leave_no_metric_batch_rows(master: Master, tmp_path: Path) -> None:
    run_two_trials(master, tmp_path)
    db = sqlite3.connect(f"file:{master.home / 'trialkit.db'}?mode=ro", uri=True, timeout=30)
    try:
        batches = db.execute("SELECT count(*) FROM metric_batches").fetchone()[0]
        metrics = db.execute("SELECT count(*) FROM metrics").fetchone()[0]
    finally:
        db.close()
    assert metrics >= 4  # each trial's training and validation report were stored
    assert batches == 0
