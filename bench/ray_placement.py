"""Benchmark: ``trialkit experiment create`` -> first stored metric for a trial on a Ray pool,
beside the same on the local pool (one master with both pools), and beside Ray Tune's own time
from ``Tuner.fit()`` to the trainable's first ``tune.report`` on the same local Ray cluster
when ``ray[tune]`` is importable (else it says so). Tune's process start -> first report is
shown too (the issue's 9.7-12.7 s was measured that way).

Issue 21's figure: "create -> first metric for a trial on the Ray pool, beside the local pool
and beside Ray Tune's own time to first report (measured here at 9.7-12.7 s)".

A one-node Ray cluster (``ray start --head --block``, its own temp dir and port on loopback) is
started here and stopped by process id at the end. Each figure is repeated and reported as
median and min. Exits 0 whether the Ray pool is fast or slow; 1 only when the benchmark broke.

Usage: ``python bench/ray_placement.py`` (about two minutes on 2 cores; needs the ray extra,
and ``pip install 'ray[tune]'`` for the Tune rows; the ``trialkit`` command on PATH).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import BenchmarkBroken, clean_env
from create_to_first_metric import CONFIG, create_to_first_metric, write_experiment

REPEATS = 3
RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
    # Ray's memory monitor kills workers when the machine is over 95 % full, which a shared CI
    # machine often is (for other processes' memory): off, so the tests see only their faults.
    "RAY_memory_monitor_refresh_ms": "0",
}

#: A one-trial Tune run: the time ``Tuner.fit()`` is called (driver) and the time the
#: trainable calls its first ``tune.report`` (worker, same machine: the same clock), printed.
TUNE_SCRIPT = """\
import sys, time
from pathlib import Path
from ray import tune

REPORTED = Path(sys.argv[1])

def trainable(config):
    REPORTED.write_text(f"{time.time():.6f}")
    tune.report({"loss": 1.0})

tuner = tune.Tuner(
    trainable,
    tune_config=tune.TuneConfig(num_samples=1),
    run_config=tune.RunConfig(verbose=0, storage_path=sys.argv[2]),
)
print(f"FIT {time.time():.6f}", flush=True)
tuner.fit()
print(f"REPORT {REPORTED.read_text()}", flush=True)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_ray_head(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A one-node Ray cluster with 2 CPUs; (its ``ray start`` process, its address)."""
    port = free_port()
    ray = str(Path(sys.executable).with_name("ray"))
    proc = subprocess.Popen(
        [
            ray,
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            f"--temp-dir={tmp / 'ray'}",
            "--disable-usage-stats",
        ],
        env={**os.environ, **RAY_ENV},
        stdout=open(tmp / "ray.log", "wb"),  # noqa: SIM115 (the node writes it)
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    probe = f"import ray; ray.init(address={address!r}, logging_level='ERROR')"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        out = subprocess.run(
            [sys.executable, "-c", probe],
            env={**os.environ, **RAY_ENV},
            capture_output=True,
            timeout=120,
        )
        if out.returncode == 0:
            return proc, address
        time.sleep(1)
    stop(proc)
    raise BenchmarkBroken(f"the Ray head did not start; see {tmp / 'ray.log'}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a ``ray start --block`` and everything under it (its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def pool_times(tmp: Path, address: str) -> dict[str, list[float]]:
    """create -> first metric on each pool, alternating, against one master with both pools."""
    from trialkit.client import start_background, stop_master

    home = tmp / "home"
    home.mkdir()
    (home / "master.yaml").write_text(
        f"resource_pools:\n  ray:\n    type: ray\n    address: {address}\n"
        f"    shared_paths: [{tmp}]\n"
    )
    os.environ.update(RAY_ENV)
    start_background(home, wait=120).close()
    times: dict[str, list[float]] = {"local": [], "ray": []}
    try:
        for pool in ["local", "ray"] * REPEATS:
            exp = tmp / f"exp-{pool}-{len(times[pool])}"
            exp.mkdir()
            cfg, model_dir = write_experiment(exp)
            cfg.write_text(CONFIG + f"resources: {{resource_pool: {pool}}}\n")
            times[pool].append(create_to_first_metric(home, cfg, model_dir)[1])
    finally:
        stop_master(home)
    return times


def tune_times(tmp: Path, address: str) -> dict[str, list[float]] | None:
    """Ray Tune on the same cluster: ``fit`` (Tuner.fit() -> the trainable's first
    tune.report) and ``start`` (process start -> that report); None when there is no
    ray[tune]."""
    env = {**clean_env(tmp / "unused"), **RAY_ENV, "RAY_ADDRESS": address}
    check = subprocess.run(
        [sys.executable, "-c", "import ray.tune"], env=env, capture_output=True, timeout=120
    )
    if check.returncode != 0:
        return None
    script = tmp / "tune_first.py"
    script.write_text(TUNE_SCRIPT)
    times: dict[str, list[float]] = {"fit": [], "start": []}
    for i in range(REPEATS):
        reported, results = tmp / f"tune-report-{i}", tmp / f"tune-results-{i}"
        t0 = time.time()
        out = subprocess.run(
            [sys.executable, str(script), str(reported), str(results)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        marks = dict(
            ln.split()[:2] for ln in out.stdout.splitlines() if ln.startswith(("FIT ", "REPORT "))
        )
        if out.returncode != 0 or not {"FIT", "REPORT"} <= marks.keys():
            raise BenchmarkBroken(f"Ray Tune reported nothing:\n{out.stdout}\n{out.stderr}")
        times["fit"].append(float(marks["REPORT"]) - float(marks["FIT"]))
        times["start"].append(float(marks["REPORT"]) - t0)
    return times


def main() -> int:
    if importlib.util.find_spec("ray") is None:
        print("skipped: ray is not installed (pip install 'trialkit[ray]')")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="tk-bench-ray-", dir="/tmp"))  # short: Ray's sockets
    head = None
    try:
        head, address = start_ray_head(tmp)
        times = pool_times(tmp, address)
        tune = tune_times(tmp, address)
    except BenchmarkBroken as e:
        print(f"benchmark broken: {e}", file=sys.stderr)
        return 1
    finally:
        if head is not None:
            stop(head)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"create -> first stored metric, one master with a local and a ray pool ({REPEATS} runs)")
    print("Ray: a one-node cluster on this machine, 2 CPUs\n")
    head_line = f"{'figure':<44} {'median s':>9} {'min s':>7} {'vs local':>9}"
    print(head_line)
    print("-" * len(head_line))
    base = statistics.median(times["local"])
    rows = [
        ("local pool: create -> first metric", times["local"]),
        ("ray pool: create -> first metric", times["ray"]),
    ]
    if tune is not None:
        rows.append(("Ray Tune: Tuner.fit() -> first tune.report", tune["fit"]))
        rows.append(("Ray Tune: process start -> first tune.report", tune["start"]))
    for name, values in rows:
        med = statistics.median(values)
        print(f"{name:<44} {med:>9.3f} {min(values):>7.3f} {med / base:>8.1f}x")
    if tune is None:
        print(
            "\nRay Tune: skipped (ray.tune is not importable here: pip install 'ray[tune]'); "
            "the trialkit figures above stand alone"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
