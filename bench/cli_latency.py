"""Benchmark: how long the CLI's read commands take with a master already running.

Goal (issue text): "`trialkit e list` and `e describe N` under 0.3 s median with a warm master".

A master is started in a fresh ``TRIALKIT_HOME`` and runs one small experiment to the end (its
start-up is not counted). Then each command runs as a user runs it, a subprocess of the
``trialkit`` entry point, ROUNDS times in interleaved rounds (so the load of a shared machine
falls on every figure alike), and the median and min wall times are printed beside two floors
measured the same way: ``python -c pass`` (interpreter start) and ``python -c "import httpx"``
(the HTTP client every command needs). Bytecode is cached as in a user's install. Exits 0 whether or not the goal is met; 1 only when the
benchmark broke.

Usage: ``python bench/cli_latency.py`` (about 20 s on 2 cores).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import BenchmarkBroken, clean_env, cli_path

ROUNDS = 15
GOAL_S = 0.3
TIMEOUT_S = 60.0

TRIAL_SCRIPT = """\
from trialkit import core

with core.init() as core_context:
    for step in (1, 2):
        core_context.train.report_training_metrics(steps_completed=step, metrics={"loss": 1 / step})
    core_context.train.report_validation_metrics(steps_completed=2, metrics={"loss": 0.5})
"""

CONFIG = """\
name: bench-cli-latency
entrypoint: python3 train.py
hyperparameters:
  lr: {type: double, minval: 0.001, maxval: 0.1}
searcher: {name: random, metric: loss, max_length: 1, max_trials: 2}
max_restarts: 0
"""


def make_experiment(tmp: Path, home: Path) -> None:
    """Create the small experiment and wait until it has ended (so describe has data)."""
    model_dir = tmp / "model"
    model_dir.mkdir()
    (model_dir / "train.py").write_text(TRIAL_SCRIPT)
    cfg = tmp / "cfg.yaml"
    cfg.write_text(CONFIG)
    done = subprocess.run(
        [cli_path(), "experiment", "create", str(cfg), str(model_dir), "--follow"],
        env=clean_env(home),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    if done.returncode != 0:
        raise BenchmarkBroken(f"the experiment did not complete:\n{done.stdout}\n{done.stderr}")


def cached_bytecode(env: dict[str, str], cache: Path) -> dict[str, str]:
    """``env`` with bytecode written and reused (in ``cache``, not beside the sources), as in a
    user's install: tox sets PYTHONDONTWRITEBYTECODE, which would compile every module anew."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def wall(argv: list[str], env: dict[str, str]) -> float:
    """Seconds for one subprocess run of ``argv`` (which must succeed)."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, timeout=TIMEOUT_S)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise BenchmarkBroken(f"{' '.join(argv)} failed:\n{done.stderr.decode()}")
    return elapsed


def main() -> None:
    from trialkit.client import start_background, stop_master

    with tempfile.TemporaryDirectory(prefix="trialkit-bench-cli-") as tmpdir:
        tmp = Path(tmpdir)
        home = tmp / "home"
        start_background(home).close()
        try:
            make_experiment(tmp, home)
            env = cached_bytecode(clean_env(home), tmp / "pycache")
            commands = {
                "python -c pass": [sys.executable, "-c", "pass"],
                'python -c "import httpx"': [sys.executable, "-c", "import httpx"],
                "trialkit e list": [cli_path(), "e", "list"],
                "trialkit e describe 1": [cli_path(), "e", "describe", "1"],
            }
            for argv in commands.values():  # warm the page cache and the master's first answers
                wall(argv, env)
            times: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(ROUNDS):
                for name, argv in commands.items():
                    times[name].append(wall(argv, env))
        finally:
            stop_master(home)
    print(f"goal: trialkit e list and e describe N under {GOAL_S:.1f} s median (warm master)")
    print(f"{ROUNDS} interleaved rounds, each command a fresh subprocess")
    print()
    head = f"{'command':<28} {'median s':>9} {'min s':>7}"
    print(head)
    print("-" * len(head))
    for name, values in times.items():
        print(f"{name:<28} {statistics.median(values):>9.3f} {min(values):>7.3f}")
    print()
    for name in ("trialkit e list", "trialkit e describe 1"):
        med = statistics.median(times[name])
        print(f"{name}: {'meets' if med < GOAL_S else 'misses'} the goal ({med:.3f} s)")


if __name__ == "__main__":
    try:
        main()
    except BenchmarkBroken as e:
        print(f"benchmark broken: {e}", file=sys.stderr)
        sys.exit(1)
