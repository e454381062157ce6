"""Benchmark: searcher decision throughput.

Goal (issue text): "Searcher decision throughput: 10,000 trials' validations processed in under
1 s of searcher time."

Each search runs 10,000 trials to its Shutdown on the simulated cluster of ``searcher_sim.py``
(64 workers, a validation after every unit of training). "Searcher time" is the time spent inside
the search method's calls (initial_operations, on_trial_created, on_validation_completed,
on_trial_closed) plus carrying out the operations they return in the simulation; the simulated
training itself is not counted. The baseline, measured in the same run, is a plain Python loop
doing one dict update and one list append per validation.

Usage: ``python bench/searcher_throughput.py`` (about 10 s).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from searcher_sim import Simulation  # noqa: E402

TRIALS = 10_000
GOAL_SECONDS = 1.0

SEARCHES = {
    "random (0.38)": {"name": "random", "max_trials": TRIALS},
    "async_halving (0.38, stopping)": {
        "name": "async_halving", "num_rungs": 3, "time_metric": "batches", "max_time": 16,
        "max_trials": TRIALS,
    },
    "adaptive_asha (0.38, stopping)": {
        "name": "adaptive_asha", "time_metric": "batches", "max_time": 16, "max_trials": TRIALS,
    },
    "adaptive_asha (0.37, promotion)": {
        "name": "adaptive_asha", "max_length": {"batches": 16}, "max_trials": TRIALS,
    },
    "adaptive_asha (0.37, stop_once)": {
        "name": "adaptive_asha", "max_length": {"batches": 16}, "max_trials": TRIALS,
        "stop_once": True,
    },
}  # fmt: skip


def baseline(validations: int) -> float:
    start = time.perf_counter()
    seen: dict[int, float] = {}
    log: list[float] = []
    for i in range(validations):
        seen[i % TRIALS] = i * 0.5
        log.append(i * 0.5)
    return time.perf_counter() - start


def main() -> int:
    met = True
    print(f"{'search':<34} {'trials':>7} {'validations':>11} {'searcher s':>10} {'µs/val':>7}"
          f" {'per 10k trials':>14} {'vs dict+append':>14}")  # fmt: skip
    for name, searcher in SEARCHES.items():
        sim = Simulation(
            {"metric": "loss", "max_concurrent_trials": 64, **searcher},
            seed=1,
            workers=64,
            max_units=16,
        )
        r = sim.run()
        if r.trials != TRIALS:
            print(f"benchmark broken: {name} created {r.trials} trials, expected {TRIALS}")
            return 1
        per_10k = r.searcher_seconds * 10_000 / r.trials
        base = baseline(r.validations)
        ok = per_10k < GOAL_SECONDS
        met = met and ok
        print(
            f"{name:<34} {r.trials:>7} {r.validations:>11} {r.searcher_seconds:>10.3f}"
            f" {r.searcher_seconds / r.validations * 1e6:>7.2f} {per_10k:>13.3f}s"
            f" {r.searcher_seconds / base:>13.1f}x"
        )
    print(
        f"goal: 10,000 trials' validations in under {GOAL_SECONDS:.0f} s of searcher time:"
        f" {'met' if met else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
