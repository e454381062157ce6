"""Benchmark: training units adaptive_asha needs to match random search's best result.

Goal (issue text): "On a synthetic benchmark of learning curves with a known optimum:
adaptive_asha reaches the random-search best in at most 1/3 of the total training units random
search needs, same seed and budget, both run in one script."

Both searches run on the same simulated cluster (``searcher_sim.py``: 16 workers, one unit of
training per worker per tick, a validation after every unit in the 0.38 generation) with the same
``experiment_seed``, ``max_trials`` and length, so they draw the very same hyperparameters in the
same order. "Units random search needs" = the cumulative units trained when random search's best
result arrived (less than its whole budget, max_trials × length); adaptive_asha's figure is the
cumulative units when one of its validations first matched that value. Repeated over several
seeds; the goal is judged on the median ratio, and the worst seed is printed too.

Usage: ``python bench/searcher_asha_vs_random.py`` (a few seconds).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from searcher_sim import OPTIMUM, Simulation, learning_curve  # noqa: E402

MAX_TRIALS = 256
LENGTH = 256
WORKERS = 16
SEEDS = range(1, 8)
GOAL = 1 / 3


def _searchers(
    generation: str, asha_trials: int = MAX_TRIALS
) -> tuple[dict[str, Any], dict[str, Any]]:
    length: dict[str, Any] = (
        {"max_length": {"batches": LENGTH}}
        if generation == "0.37"
        else {"time_metric": "batches", "max_time": LENGTH}
    )
    common = {"metric": "loss", "max_trials": MAX_TRIALS, "max_concurrent_trials": WORKERS}
    random_search = {"name": "random", **common}
    if generation == "0.37":
        random_search["max_length"] = length["max_length"]
    return random_search, {"name": "adaptive_asha", **common, **length, "max_trials": asha_trials}


def compare(generation: str, seed: int, asha_trials: int = MAX_TRIALS) -> dict[str, float]:
    random_cfg, asha_cfg = _searchers(generation, asha_trials)
    rnd = Simulation(random_cfg, seed=seed, workers=WORKERS, max_units=LENGTH).run()
    asha = Simulation(asha_cfg, seed=seed, workers=WORKERS).run()
    target = rnd.best()
    random_needs = rnd.units_to_reach(target)
    asha_needs = asha.units_to_reach(target)
    assert random_needs is not None
    return {
        "random_best": target,
        "asha_best": asha.best(),
        "random_needs": random_needs,
        "random_total": rnd.units_total,
        "asha_needs": float("inf") if asha_needs is None else asha_needs,
        "asha_total": asha.units_total,
        "ratio": float("inf") if asha_needs is None else asha_needs / random_needs,
    }


def main() -> int:
    print(
        "synthetic learning curves; known optimum lr=10^-2.5, wd=0.3 (loss -> 0.05; the"
        f" optimum's loss at {LENGTH} units: {learning_curve(OPTIMUM, LENGTH):.4f});"
        f" max_trials {MAX_TRIALS}, length {LENGTH}, {WORKERS} workers"
    )
    met = True
    for generation, label, asha_trials in (
        ("0.38", "0.38 time_metric/max_time (stopping ASHA), same max_trials and length", 0),
        ("0.37", "0.37 max_length (promotion ASHA), same max_trials and length", 0),
        ("0.38", "0.38, same training budget: ASHA may try 16x the trials", 16),
    ):
        rows = [compare(generation, seed, (asha_trials or 1) * MAX_TRIALS) for seed in SEEDS]
        print(f"\n{label}")
        print(
            f"{'seed':>4} {'random best':>11} {'units':>7} {'of total':>8}"
            f" {'asha best':>9} {'units to match':>14} {'asha total':>10} {'ratio':>6}"
        )
        for seed, r in zip(SEEDS, rows, strict=True):
            print(
                f"{seed:>4} {r['random_best']:>11.4f} {r['random_needs']:>7.0f}"
                f" {r['random_total']:>8.0f} {r['asha_best']:>9.4f} {r['asha_needs']:>14.0f}"
                f" {r['asha_total']:>10.0f} {r['ratio']:>6.3f}"
            )
        median = statistics.median(r["ratio"] for r in rows)
        reached = sum(r["ratio"] != float("inf") for r in rows)
        ok = median <= GOAL
        if not asha_trials:
            met = met and ok
        print(
            f"median ratio (asha units to match ÷ random units to its best) = {median:.3f};"
            f" ASHA matched random's best in {reached}/{len(rows)} seeds;"
            f" goal ≤ {GOAL:.3f} on the median: {'met' if ok else 'NOT met'}"
        )
    print(f"\noverall: goal {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
