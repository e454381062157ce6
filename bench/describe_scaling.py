"""Benchmark: ``experiment describe`` latency and SQL statements against the number of trials.

Goal (issue 17): the number of SQL statements one describe runs is constant in the number of
trials, and its latency grows only with the data it returns.

A real master app (the store on SQLite in a temporary home, the engine not started, so no
trial runs) serves on a loopback port in this process; the set-up writes experiments of 10,
50 and 200 trials straight into the store (25 training and 5 validation reports and one
checkpoint per trial). Each describe is a real HTTP request; a SQLAlchemy
``before_cursor_execute`` listener on the master's engine counts the statements it runs. When
the master has the cheaper route ``--follow`` polls (``/summary``), it is measured too.

Usage: ``python bench/describe_scaling.py`` (about 20 s). Exits 0 whether or not the goal is
met; 1 only when the benchmark broke.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from _common import BENCH_TOKEN, BenchmarkBroken, served_master

SIZES = (10, 50, 200)
TRAINING_REPORTS = 25
VALIDATION_REPORTS = 5
WARMUP = 3
REPEATS = 15
TOKEN = BENCH_TOKEN


def config(trials: int) -> dict[str, Any]:
    return {
        "name": f"scaling-{trials}",
        "entrypoint": "python3 train.py",
        "searcher": {
            "name": "random",
            "metric": "validation_loss",
            "smaller_is_better": True,
            "max_trials": trials,
            "max_length": {"batches": 100},
        },
        "hyperparameters": {"lr": {"type": "double", "minval": 0.001, "maxval": 0.1}},
    }


def populate(store: Any, trials: int) -> int:
    """An experiment of ``trials`` trials with metrics and a checkpoint each; its id."""
    from trialkit.store import NewMetric, TrialState

    exp = store.create_experiment(name=f"scaling-{trials}", config=config(trials))
    for i in range(trials):
        t = store.create_trial(
            experiment_id=exp.id, request_id=uuid.uuid4().hex, hparams={"lr": 0.01 + i}, seed=i
        )
        reports = [
            NewMetric(t.id, "training", s * 4, {"loss": 1.0 / (s + 1), "batches": s * 4})
            for s in range(TRAINING_REPORTS)
        ]
        reports += [
            NewMetric(t.id, "validation", s * 20, {"validation_loss": (i % 7 + 1) / (s + 1)})
            for s in range(VALIDATION_REPORTS)
        ]
        store.add_metrics(reports)
        store.add_checkpoint(
            uuid=str(uuid.uuid4()),
            trial_id=t.id,
            experiment_id=exp.id,
            run_id=1,
            steps_completed=100,
            metadata={},
            resources={"model.pt": 10},
            storage={"type": "shared_fs", "host_path": "/tmp"},
        )
        store.update_trial(t.id, state=TrialState.COMPLETED, run_id=1)
    return int(exp.id)


class StatementCounter:
    """Counts the SQL statements the master's engine executes."""

    def __init__(self, engine: Any) -> None:
        from sqlalchemy import event

        self.count = 0
        self._lock = threading.Lock()
        event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, *_: Any) -> None:
        with self._lock:
            self.count += 1


def measure(http: Any, counter: StatementCounter, path: str) -> tuple[float, int, int] | None:
    """(median ms, statements per request, response bytes) of GET ``path``; None on a 404."""
    for _ in range(WARMUP):
        resp = http.get(path)
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            raise BenchmarkBroken(f"GET {path}: HTTP {resp.status_code}: {resp.text[:200]}")
    before = counter.count
    http.get(path)
    statements = counter.count - before
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        resp = http.get(path)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), statements, len(resp.content)


def main() -> int:
    import httpx

    import trialkit

    print(f"trialkit from {Path(trialkit.__file__).parent}")
    rows: list[tuple[str, int, float, int, int]] = []
    with tempfile.TemporaryDirectory(prefix="describe-scaling-") as tmp:
        with served_master(Path(tmp)) as (url, store):
            counter = StatementCounter(store._engine)
            experiments = {n: populate(store, n) for n in SIZES}
            headers = {"Authorization": f"Bearer {TOKEN}"}
            with httpx.Client(base_url=url, headers=headers, timeout=60, trust_env=False) as http:
                for n, exp_id in experiments.items():
                    for what, path in (
                        ("describe", f"/api/v1/experiments/{exp_id}"),
                        ("follow poll", f"/api/v1/experiments/{exp_id}/summary"),
                    ):
                        found = measure(http, counter, path)
                        if found is not None:
                            rows.append((what, n, *found))
    print(f"{'route':<12} {'trials':>6} {'median ms':>10} {'SQL statements':>15} {'bytes':>9}")
    for what, n, ms, statements, size in rows:
        print(f"{what:<12} {n:>6} {ms:>10.1f} {statements:>15} {size:>9}")
    counts = {n: s for what, n, _, s, _ in rows if what == "describe"}
    constant = len(set(counts.values())) == 1
    print(f"goal: describe's SQL statements constant in the number of trials: {constant}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchmarkBroken as e:
        print(f"benchmark broken: {e}", file=sys.stderr)
        sys.exit(1)
