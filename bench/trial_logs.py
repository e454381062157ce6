"""``trialkit t logs`` of a 100 MB log: seconds until its first line is printed, until all of
it is, and for ``--tail 10``; goal: the first line under 1 s, and ``--tail`` about as fast as a
short log's (it starts from the end of the log).

A real master (``trialkit master up``) over a store holding one trial's log of 1,000,000 lines
of ~100 characters, written straight into the store beforehand (~30 s), and a 10-line trial
beside it. The CLI runs as a subprocess (its ~0.3 s start is in every figure). With
``--compare SRC``, the same first with the master and CLI of another source tree (e.g. a
``git archive`` of main's ``src``).

    python bench/trial_logs.py [--lines 1000000] [--compare /tmp/main/src]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import BenchmarkBroken, cli_path, master_process, src_env

GOAL_FIRST_LINE_S = 1.0


def populate(home: Path, src: str, lines: int) -> None:
    """Experiment 1 with trial 1 (``lines`` lines of log) and trial 2 (10 lines), finished."""
    script = f"""
import uuid
from pathlib import Path
from trialkit.store import ExperimentState, Store, TrialState
store = Store.at(Path({str(home)!r}))
exp = store.create_experiment(name="logs", config={{
    "name": "logs", "entrypoint": "python3 train.py",
    "searcher": {{"name": "random", "metric": "loss", "max_trials": 2,
                 "max_length": {{"batches": 10}}}},
    "hyperparameters": {{"lr": {{"type": "double", "minval": 0.001, "maxval": 0.1}}}}}})
pad = "x" * 80
for count in ({lines}, 10):
    t = store.create_trial(experiment_id=exp.id, request_id=uuid.uuid4().hex,
                           hparams={{"lr": 0.01}}, seed=1)
    for start in range(0, count, 20_000):
        store.add_logs(t.id, 1, [f"line {{i:>9}} {{pad}}" for i in range(start, min(count, start + 20_000))])
    store.update_trial(t.id, state=TrialState.COMPLETED, run_id=1)
store.update_experiment(exp.id, state=ExperimentState.COMPLETED, progress=1.0)
store.close()
"""
    subprocess.run(
        [sys.executable, "-c", script], env=src_env(home, src), check=True, capture_output=True
    )


def timed_logs(home: Path, src: str, *args: str) -> tuple[float, float, int]:
    """(seconds to the first line, seconds to the end, lines) of ``trialkit t logs ARGS``."""
    cmd = [sys.executable, cli_path(), "t", "logs", *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=src_env(home, src), stdout=subprocess.PIPE)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    t_first = time.perf_counter() - t0
    count = 1 if first else 0
    for _ in proc.stdout:
        count += 1
    if proc.wait() != 0:
        raise BenchmarkBroken(f"trialkit t logs {' '.join(args)} exited {proc.returncode}")
    return t_first, time.perf_counter() - t0, count


def measure(src: str, lines: int) -> dict[str, tuple[float, float, int]]:
    with tempfile.TemporaryDirectory(prefix="trial-logs-") as tmp:
        home = Path(tmp)
        populate(home, src, lines)
        with master_process(home, src):
            runs = {
                "short log (10 lines)": timed_logs(home, src, "2"),
                f"--tail 10 of {lines:,} lines": timed_logs(home, src, "1", "--tail", "10"),
                f"all {lines:,} lines": timed_logs(home, src, "1"),
            }
    for name, (_, _, count) in runs.items():
        expected = 10 if "10" in name.split(" of ")[0] else lines
        if count != expected:
            raise BenchmarkBroken(f"{name}: {count} lines printed, not {expected}")
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--compare", metavar="SRC", default=None, help="another tree's src")
    args = parser.parse_args()
    trees = [("compared", args.compare)] if args.compare else []
    trees.append(("this tree", str(Path(__file__).resolve().parents[1] / "src")))
    for name, src in trees:
        print(f"{name} ({src}): seconds to the first line / to the end")
        runs = measure(src, args.lines)
        for what, (first, total, _) in runs.items():
            print(f"  {what:<28} {first:7.2f} / {total:7.2f}")
    first = runs[f"all {args.lines:,} lines"][0]
    met = "met" if first < GOAL_FIRST_LINE_S else "NOT met"
    print(f"goal: the first line of the long log under {GOAL_FIRST_LINE_S:.0f} s: {met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
