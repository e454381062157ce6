"""Benchmark: from ``trialkit experiment create`` to the experiment's first stored metric.

Goal (issue text): "`experiment create` -> first reported metric: under 2 s on these machines."

The clock starts when ``trialkit experiment create cfg.yaml model_dir`` is launched as a
subprocess, the way a user runs it, and stops when the store (polled every 10 ms) holds the first
training metric of that experiment; the trial reports one metric right after ``core.init()``.

- warm: a master is already running in a fresh ``TRIALKIT_HOME`` (its start-up is not counted);
- cold: a fresh home and no master, so ``experiment create`` starts one first.

Baseline from the same run: a subprocess ``python -c "import trialkit.core"`` (interpreter start
plus import), printed beside each figure as a ratio. Each figure is repeated and reported as
median and min. Exits 0 whether or not the goal is met; 1 only when the benchmark broke.

Usage: ``python bench/create_to_first_metric.py`` (about half a minute on 2 cores).
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import BenchmarkBroken, clean_env, cli_path

REPEATS = 5
POLL_S = 0.010
GOAL_S = 2.0
TIMEOUT_S = 30.0

TRIAL_SCRIPT = """\
from trialkit import core

with core.init() as core_context:
    core_context.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
"""

CONFIG = """\
name: bench-create-to-first-metric
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: 1}
max_restarts: 0
"""


def write_experiment(tmp: Path) -> tuple[Path, Path]:
    """The config file and model directory of the one-metric experiment."""
    model_dir = tmp / "model"
    model_dir.mkdir()
    (model_dir / "train.py").write_text(TRIAL_SCRIPT)
    cfg = tmp / "cfg.yaml"
    cfg.write_text(CONFIG)
    return cfg, model_dir


def import_baseline() -> float:
    """Seconds for a subprocess that starts Python and imports ``trialkit.core``."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import trialkit.core"], check=True)
    return time.perf_counter() - t0


def master_ready(home: Path) -> bool:
    """Whether a master has announced itself (and so created the store) in ``home``."""
    try:
        return bool(json.loads((home / "master.json").read_text()).get("token"))
    except (OSError, ValueError):
        return False


class FirstMetricWatch:
    """Polls a home's store for a training metric of a trial it has not seen before."""

    def __init__(self, home: Path) -> None:
        from trialkit.store import Store

        self.home = home
        self._store: Store | None = None
        self._known: set[int] = set()
        if master_ready(home):
            self._store = Store.at(home)
            self._known = {t.id for t in self._store.list_trials()}

    def found(self) -> bool:
        """True once a new trial has a training metric (opens the store once the master made it)."""
        if self._store is None:
            if not master_ready(self.home):
                return False
            from trialkit.store import Store

            self._store = Store.at(self.home)
        new = [t.id for t in self._store.list_trials() if t.id not in self._known]
        return any(self._store.count_metrics(tid, "training") > 0 for tid in new)

    def wait_until_finished(self, experiment_id: int) -> None:
        """Let the experiment end so its trial does not run into the next measurement."""
        deadline = time.monotonic() + TIMEOUT_S
        while self._store is not None and time.monotonic() < deadline:
            if self._store.get_experiment(experiment_id).state.ended:
                return
            time.sleep(0.05)
        raise BenchmarkBroken(f"experiment {experiment_id} did not finish within {TIMEOUT_S:.0f} s")

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def create_to_first_metric(home: Path, cfg: Path, model_dir: Path) -> tuple[float, float]:
    """(seconds until ``experiment create`` exited, seconds until the first metric was stored)."""
    watch = FirstMetricWatch(home)
    try:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [cli_path(), "experiment", "create", str(cfg), str(model_dir)],
            env=clean_env(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        created_s: float | None = None
        while True:
            now = time.perf_counter() - t0
            if created_s is None and proc.poll() is not None:
                created_s = now
            if watch.found():
                first_s = time.perf_counter() - t0
                break
            if now > TIMEOUT_S or (created_s is not None and proc.returncode != 0):
                proc.kill()
                out = proc.communicate()[0]
                raise BenchmarkBroken(
                    f"no metric after {now:.1f} s; experiment create said:\n{out}"
                )
            time.sleep(POLL_S)
        output = proc.communicate(timeout=TIMEOUT_S)[0]
        if created_s is None:
            created_s = time.perf_counter() - t0
        found = re.search(r"Created experiment (\d+)", output)
        if not found:
            raise BenchmarkBroken(f"experiment create printed no id:\n{output}")
        watch.wait_until_finished(int(found.group(1)))
        return created_s, first_s
    finally:
        watch.close()


def run_warm(tmp: Path, cfg: Path, model_dir: Path) -> list[tuple[float, float]]:
    """REPEATS experiments against one master started beforehand (start-up not counted)."""
    from trialkit.client import start_background, stop_master

    home = tmp / "warm-home"
    start_background(home).close()
    try:
        return [create_to_first_metric(home, cfg, model_dir) for _ in range(REPEATS)]
    finally:
        stop_master(home)


def run_cold(tmp: Path, cfg: Path, model_dir: Path) -> list[tuple[float, float]]:
    """REPEATS experiments, each in a fresh home with no master: create starts one."""
    from trialkit.client import stop_master

    times = []
    for i in range(REPEATS):
        home = tmp / f"cold-home-{i}"
        try:
            times.append(create_to_first_metric(home, cfg, model_dir))
        finally:
            stop_master(home)
    return times


def print_report(
    baseline: list[float], warm: list[tuple[float, float]], cold: list[tuple[float, float]]
) -> None:
    base = statistics.median(baseline)
    print(
        f"goal: experiment create -> first reported metric under {GOAL_S:.1f} s (master already running)"
    )
    print(f"{REPEATS} runs each; first metric polled in the store every {POLL_S * 1e3:.0f} ms")
    print()
    head = f"{'figure':<40} {'median s':>9} {'min s':>7} {'vs baseline':>12}"
    print(head)
    print("-" * len(head))
    rows = [
        ("baseline: python -c 'import trialkit.core'", baseline),
        ("warm: create -> first metric", [f for _, f in warm]),
        ("warm: create command exited", [c for c, _ in warm]),
        ("cold (starts master): -> first metric", [f for _, f in cold]),
        ("cold (starts master): create exited", [c for c, _ in cold]),
    ]
    for name, values in rows:
        med = statistics.median(values)
        print(f"{name:<40} {med:>9.3f} {min(values):>7.3f} {med / base:>11.1f}x")
    print()
    warm_med = statistics.median(f for _, f in warm)
    verdict = "met" if warm_med < GOAL_S else "NOT met"
    print(f"goal {verdict}: warm median {warm_med:.3f} s vs {GOAL_S:.1f} s")


def main() -> int:
    try:
        with tempfile.TemporaryDirectory(prefix="trialkit-bench-create-") as name:
            tmp = Path(name)
            cfg, model_dir = write_experiment(tmp)
            import_baseline()  # warm-up: file cache, .pyc
            baseline = [import_baseline() for _ in range(REPEATS)]
            warm = run_warm(tmp, cfg, model_dir)
            cold = run_cold(tmp, cfg, model_dir)
    except BenchmarkBroken as e:
        print(f"benchmark broken: {e}", file=sys.stderr)
        return 1
    print_report(baseline, warm, cold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
