"""Benchmark: ``report_training_metrics`` throughput and its cost inside a training loop.

Goal (issue text): "report_training_metrics from one process: at least 50,000 calls/s with no
loss (all rows in the store afterwards), and the loop with reporting at most 2 % slower than
without."

Measured twice, each time in a fresh process and a fresh ``TRIALKIT_HOME``:

- master: this file is copied into a model directory and run as the trial of an experiment made
  with ``trialkit experiment create`` against a real master, so reports travel over HTTP;
- local: the same worker run as ``python metrics_throughput.py --worker OUT`` with no master, so
  ``core.init()`` journals the reports, and the master's ingest stores them (run here as a
  starting master runs it).

The worker times N tight report calls, then the close (the drain of the queue), then a loop of
~1 ms numpy steps with and without a report per step (and without again, as a control of the
noise), in rounds of about a second that cycle through every order of the three, and writes the
timings to a JSON file. The parent then counts the training rows in the store. Baselines come
from the same process: a plain ``list.append`` of the same report dict for calls/s, and the same
loop without reports for the loop ratio, taken as the median over rounds of the ratio within
each round, with a bootstrap interval (bench/_common.py). Exits 0 whether or not the goals are met; exits 1 only
when the benchmark broke (a trial failed, or rows were lost).

Usage: ``python bench/metrics_throughput.py`` (about a minute on 2 cores).
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import BenchmarkBroken, PairedRatio, clean_env, cli_path, paired_ratio

N_CALLS = 200_000
WARMUP_CALLS = 5_000
LOOP_STEPS = 1_000
WARMUP_STEPS = 200
ROUNDS = 24
STEP_SECONDS = 0.001
GOAL_CALLS_PER_S = 50_000
GOAL_LOOP_RATIO = 1.02
TRIAL_TIMEOUT_S = 100.0

# One BLAS thread: a steady step time on a 2-core machine, and the other core left to the
# metrics thread and the master, as a trial pinned to its slot would have it.
SINGLE_THREAD_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


# Worker: runs inside the trial (master mode) or as a plain script (local mode) -----------------


def make_step(target_s: float = STEP_SECONDS) -> Callable[[], float]:
    """A step of real work (repeated 96x96 matmuls) calibrated to take about ``target_s``."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.random((96, 96))
    b = rng.random((96, 96))
    for _ in range(50):
        a @ b
    t0 = time.perf_counter()
    for _ in range(500):
        a @ b
    per_matmul = (time.perf_counter() - t0) / 500
    reps = max(1, round(target_s / per_matmul))

    def step() -> float:
        c = a
        for _ in range(reps):
            c = a @ b
        return float(c[0, 0])

    return step


def time_calls(report: Callable[..., None], n: int) -> float:
    """Seconds for ``n`` back-to-back calls of ``report(steps_completed=i, metrics=...)``."""
    t0 = time.perf_counter()
    for i in range(n):
        report(steps_completed=i, metrics={"loss": 1.0 / (i + 1), "acc": 0.5})
    return time.perf_counter() - t0


def append_baseline(n: int) -> float:
    """Seconds for the least a non-blocking report can do: build the dict, append it to a list."""
    sink: list[dict[str, Any]] = []
    return time_calls(
        lambda steps_completed, metrics: sink.append(
            {"steps_completed": steps_completed, "metrics": dict(metrics)}
        ),
        n,
    )


def time_loop(step: Callable[[], float], steps: int, report: Callable[..., None] | None) -> float:
    """Seconds for ``steps`` training steps, reporting the step's loss after each when asked."""
    t0 = time.perf_counter()
    for i in range(steps):
        loss = step()
        if report is not None:
            report(steps_completed=i, metrics={"loss": loss, "acc": 0.5})
    return time.perf_counter() - t0


def compare_loops(step: Callable[[], float], report: Callable[..., None]) -> dict[str, Any]:
    """Loop times without reports, with them, and without again (the control), after a warm-up
    of each; the rounds cycle through every order of the three arms, so each arm runs first,
    second and third equally often (a fixed middle place for the reported arm biased it)."""
    time_loop(step, WARMUP_STEPS, None)
    time_loop(step, WARMUP_STEPS, report)
    times: dict[str, list[float]] = {"plain_s": [], "reported_s": [], "control_s": []}
    arms = {"plain_s": None, "reported_s": report, "control_s": None}
    orders = list(itertools.permutations(arms))
    for r in range(ROUNDS):
        for key in orders[r % len(orders)]:
            times[key].append(time_loop(step, LOOP_STEPS, arms[key]))
    return {**times, "reports": WARMUP_STEPS + ROUNDS * LOOP_STEPS}


def run_worker(out: Path) -> None:
    """Measure in this process and write the timings to ``out`` as JSON."""
    from trialkit import core

    append_baseline(WARMUP_CALLS)
    result: dict[str, Any] = {"baseline_s": append_baseline(N_CALLS)}
    ctx = core.init()
    with ctx:
        time_calls(ctx.train.report_training_metrics, WARMUP_CALLS)
        result["calls_s"] = time_calls(ctx.train.report_training_metrics, N_CALLS)
        t0 = time.perf_counter()
        ctx.close()
        result["drain_s"] = time.perf_counter() - t0
    step = make_step()
    with core.init() as ctx:
        result["loop"] = compare_loops(step, ctx.train.report_training_metrics)
    result["reports"] = WARMUP_CALLS + N_CALLS + result["loop"]["reports"]
    out.write_text(json.dumps(result))


# Parent: set up homes, master and experiment; read the results ----------------------------------


def stored_training_rows(home: Path) -> int:
    """Training rows over every trial in ``home`` (a fresh home holds only this run's), once a
    local run's journal is stored as a master starting there stores it."""
    from trialkit.master.ingest import LocalRunIngest
    from trialkit.store import Store

    store = Store.at(home)
    try:
        LocalRunIngest(store, home).ingest_all()
        return sum(store.count_metrics(t.id, "training") for t in store.list_trials())
    finally:
        store.close()


def write_experiment(tmp: Path, out: Path) -> tuple[Path, Path]:
    """A model directory holding this file and a config whose trial runs the worker."""
    model_dir = tmp / "model"
    model_dir.mkdir()
    shutil.copy(__file__, model_dir / "metrics_throughput.py")
    shutil.copy(Path(__file__).with_name("_common.py"), model_dir / "_common.py")
    env_lines = "".join(f"    - {k}={v}\n" for k, v in SINGLE_THREAD_ENV.items())
    cfg = tmp / "bench.yaml"
    cfg.write_text(
        "name: bench-metrics-throughput\n"
        f"entrypoint: python3 metrics_throughput.py --worker {out}\n"
        "searcher: {name: single, metric: loss, max_length: 1}\n"
        "max_restarts: 0\n"
        "environment:\n  environment_variables:\n" + env_lines
    )
    return cfg, model_dir


def wait_for_experiment(client: Any, experiment_id: int) -> str:
    """Poll the REST API until the experiment ends; its final state."""
    deadline = time.monotonic() + TRIAL_TIMEOUT_S
    while time.monotonic() < deadline:
        state = client.request("GET", f"/api/v1/experiments/{experiment_id}")["experiment"]["state"]
        if state in ("COMPLETED", "CANCELED", "ERROR"):
            return str(state)
        time.sleep(0.2)
    return "TIMED OUT"


def trial_log_tail(home: Path, lines: int = 30) -> str:
    logs = sorted(home.glob("trials/*/output.log"))
    return "\n".join("\n".join(p.read_text(errors="replace").splitlines()[-lines:]) for p in logs)


def run_master_mode(tmp: Path) -> dict[str, Any]:
    """The worker as the trial of an experiment on a real master; timings plus stored rows."""
    from trialkit.client import start_background, stop_master

    home = tmp / "home"
    out = tmp / "result.json"
    cfg, model_dir = write_experiment(tmp, out)
    client = start_background(home)
    try:
        created = subprocess.run(
            [cli_path(), "experiment", "create", str(cfg), str(model_dir)],
            env=clean_env(home),
            capture_output=True,
            text=True,
            check=False,
        )
        found = re.search(r"Created experiment (\d+)", created.stdout)
        if not found:
            raise BenchmarkBroken(f"experiment create failed:\n{created.stdout}{created.stderr}")
        state = wait_for_experiment(client, int(found.group(1)))
        if state != "COMPLETED" or not out.exists():
            raise BenchmarkBroken(f"the trial ended {state}; its log:\n{trial_log_tail(home)}")
        result = json.loads(out.read_text())
        result["stored"] = stored_training_rows(home)
        return result
    finally:
        client.close()
        stop_master(home)


def run_local_mode(tmp: Path) -> dict[str, Any]:
    """The worker as a plain script (no master: ``core.init()`` journals it); same figures."""
    home = tmp / "home"
    out = tmp / "result.json"
    env = {**clean_env(home), **SINGLE_THREAD_ENV}
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", str(out)],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not out.exists():
        raise BenchmarkBroken(f"local worker exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    result = json.loads(out.read_text())
    result["stored"] = stored_training_rows(home)
    return result


def summarize(mode: str, r: dict[str, Any]) -> dict[str, Any]:
    """The figures of one mode: calls/s, ratios, drain, rows and whether the goals were met."""
    calls_per_s = N_CALLS / r["calls_s"]
    loop = r["loop"]
    ratio = paired_ratio(loop["plain_s"], loop["reported_s"])
    return {
        "mode": mode,
        "calls_per_s": calls_per_s,
        "vs_append": r["baseline_s"] / r["calls_s"],
        "drain_s": r["drain_s"],
        "stored": r["stored"],
        "expected": r["reports"],
        "plain_ms": statistics.median(loop["plain_s"]) / LOOP_STEPS * 1e3,
        "loop_ratio": ratio,
        "control_ratio": paired_ratio(loop["plain_s"], loop["control_s"]),
        "calls_ok": calls_per_s >= GOAL_CALLS_PER_S and r["stored"] == r["reports"],
        "loop_ok": ratio.median <= GOAL_LOOP_RATIO,
    }


def print_report(rows: list[dict[str, Any]]) -> None:
    print(f"goal: >= {GOAL_CALLS_PER_S:,} report_training_metrics calls/s from one process with no")
    print(
        f"      loss, and a ~{STEP_SECONDS * 1e3:.0f} ms-step loop with a report per step <= {GOAL_LOOP_RATIO:.2f}x the loop without"
    )
    print(
        f"N = {N_CALLS:,} calls; loop = {ROUNDS} rounds of {LOOP_STEPS:,} steps per arm, orders cycled"
    )
    print()
    head = (
        f"{'mode':<7} {'calls/s':>10} {'vs append':>10} {'drain s':>8} {'rows stored/expected':>21} "
        f"{'step ms':>8} {'loop ratio [95 %]':>26} {'control [95 %]':>26}"
    )
    print(head)
    print("-" * len(head))
    for s in rows:
        rows_txt = f"{s['stored']:,}/{s['expected']:,}"
        print(
            f"{s['mode']:<7} {s['calls_per_s']:>10,.0f} {s['vs_append']:>9.2f}x {s['drain_s']:>8.2f} "
            f"{rows_txt:>21} {s['plain_ms']:>8.3f} {s['loop_ratio']!s:>26} {s['control_ratio']!s:>26}"
        )
    print()
    print(
        "vs append: report call speed relative to building the same dict and appending it to a list"
    )
    print(
        "loop ratio: median over rounds of (loop with reports) / (loop without) in the same round,"
    )
    print("            with its 95 % bootstrap interval; control: the loop without, run again")
    for s in rows:
        calls = "met" if s["calls_ok"] else "NOT met"
        loop = "met" if s["loop_ok"] else "NOT met"
        ratio: PairedRatio = s["loop_ratio"]
        print(
            f"{s['mode']}: calls/s goal {calls}; loop goal {loop} ({(ratio.median - 1) * 100:+.2f} %, "
            f"interval {(ratio.low - 1) * 100:+.2f} % to {(ratio.high - 1) * 100:+.2f} %)"
        )


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        run_worker(Path(sys.argv[2]))
        return 0
    rows = []
    try:
        for mode, run in (("master", run_master_mode), ("local", run_local_mode)):
            with tempfile.TemporaryDirectory(prefix=f"trialkit-bench-{mode}-") as tmp:
                rows.append(summarize(mode, run(Path(tmp))))
    except BenchmarkBroken as e:
        print(f"benchmark broken: {e}", file=sys.stderr)
        return 1
    print_report(rows)
    lost = [s["mode"] for s in rows if s["stored"] != s["expected"]]
    if lost:
        print(f"benchmark broken: rows lost in {', '.join(lost)} mode", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
