"""Benchmark: the master under load (issue 21's figures).

Ingest: N real trial processes (launched by a real master, using the Core API) each report R
training metrics/s for T s at the same moment, on SQLite and on PostgreSQL. Figures: rows stored
/ rows reported (must be 1.0); report-to-stored latency p50/p99 (goal p99 < 100 ms), measured as
the master's insert time of the row (``reported_at``, which the store stamps in the insert's
transaction) minus the trial's ``time.time()`` when it called ``report_training_metrics`` (carried
in the metric as ``sent``); the master's CPU (cores used, from psutil CPU times over the
reporting window) and peak RSS (sampled every 0.5 s). Trials start at once on a barrier: each
says it is ready in a file, the bench then writes ``go`` and every trial reports for T s, in
bursts of B reports, its schedule offset by a random phase within one burst period.

Scheduling: 1,000 queued single-slot trials placed on 1,000 free slots by the master's engine
(``TrialSupervision.schedule``: the queue read from the store, ``place``, and each launch recorded
in the store as the LAUNCHED transition) and by ``place`` alone, beside the same random search's
searcher producing its 1,000 trials alone. Spawning a process is left out (the launcher is a
recorder: ``create_to_first_metric.py`` measures spawning); the store, transitions and searcher
driver are the master's own.

With ``--master-cpus`` and ``--trial-cpus`` (e.g. ``0`` and ``1``), from the go on the master
and the database server run on the first CPUs and the trials on the others: the master's figures
with the load generator kept off its cores, as on a machine of its own (the trials may then
starve on theirs: "behind s" says how late they ran).

Usage: ``python bench/scale.py [--trials N] [--rate R] [--seconds T] [--burst B] [--skip-sqlite] [--skip-postgres]
[--skip-ingest] [--skip-scheduling] [--master-cpus LIST --trial-cpus LIST]`` (defaults N=200,
R=100, T=60 as the issue says). Exits 0 whether or not the goals are met; 1 when the benchmark
broke (a trial failed, a barrier timed out).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import BenchmarkBroken, clean_env

REPO = Path(__file__).resolve().parents[1]
GOAL_P99_MS = 100.0
SCHED_TRIALS = 1000

TRIAL = """\
import json, os, random, sys, time
from pathlib import Path
from trialkit import core

rate, seconds = float(os.environ["SCALE_RATE"]), float(os.environ["SCALE_SECONDS"])
burst = int(os.environ["SCALE_BURST"])
sync = Path(os.environ["SCALE_SYNC"])
with core.init() as ctx:
    # Instrument (the bench's only reach inside): stamp each batch with the time it is sent,
    # so the stored row also tells the master's part (send -> insert) of the latency.
    backend = ctx.train._shipper._backend
    ship = backend.send_metric_batch

    def stamped(payload, sender, seq):
        shipped = time.time()
        for r in payload:
            r["metrics"]["shipped"] = shipped
        return ship(payload, sender, seq)

    backend.send_metric_batch = stamped
    me = os.environ.get("DET_TRIAL_ID") or str(os.getpid())
    (sync / f"ready-{me}").touch()
    deadline = time.monotonic() + float(os.environ["SCALE_BARRIER_S"])
    while not (sync / "go").exists():
        if time.monotonic() > deadline:
            sys.exit("no go in time")
        time.sleep(0.05)
    # Each trial's schedule starts at its own phase within one burst period: trials that all
    # woke in the same millisecond every period would measure a thundering herd, not a master.
    phase = random.random() * burst / rate
    n, start, cpu0 = int(rate * seconds), time.monotonic() + phase, time.process_time()
    behind = 0.0
    for i in range(n):
        due = start + (i - i % burst) / rate  # the burst's first report's time
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        else:
            behind = max(behind, now - due)
        ctx.train.report_training_metrics(
            steps_completed=i + 1, metrics={"sent": time.time(), "loss": 1.0 / (i + 1)}
        )
    ctx.train._shipper.flush()
    took, cpu = time.monotonic() - start, time.process_time() - cpu0
    done = {"reported": n, "took": took, "behind": behind, "cpu": cpu}
    (sync / f"done-{me}.json").write_text(json.dumps(done))
"""


def _experiment(
    tmp: Path, trials: int, rate: float, seconds: float, burst: int, sync: Path
) -> tuple[Path, Path]:
    model = tmp / "model"
    model.mkdir()
    (model / "train.py").write_text(TRIAL)
    cfg = tmp / "scale.yaml"
    env = {
        "SCALE_RATE": rate,
        "SCALE_SECONDS": seconds,
        "SCALE_BURST": burst,
        "SCALE_SYNC": sync,
        "SCALE_BARRIER_S": 600,
        "OMP_NUM_THREADS": 1,
    }
    cfg.write_text(
        json.dumps(
            {
                "name": "bench-scale-ingest",
                "entrypoint": "python3 train.py",
                "hyperparameters": {"x": {"type": "int", "minval": 0, "maxval": 10**9}},
                "searcher": {
                    "name": "random",
                    "metric": "loss",
                    "max_trials": trials,
                    "max_concurrent_trials": trials,
                },
                "max_restarts": 0,
                "environment": {"environment_variables": [f"{k}={v}" for k, v in env.items()]},
            }
        )
    )
    return cfg, model


class Sampler(threading.Thread):
    """The master's RSS every 0.5 s (its peak) and its CPU times at two marks."""

    def __init__(self, pid: int) -> None:
        import psutil

        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.peak_rss = 0
        self.stop = threading.Event()

    def cpu(self) -> float:
        t = self.proc.cpu_times()
        return float(t.user + t.system)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.peak_rss = max(self.peak_rss, self.proc.memory_info().rss)
            except Exception:  # the master exited: the last peak stands
                return
            self.stop.wait(0.5)


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise BenchmarkBroken(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.2)


def _pin(processes: list[Any], cpus: set[int]) -> None:
    """Every thread of ``processes`` onto ``cpus`` (sched_setaffinity moves one thread; threads
    and processes started later inherit it from their parent)."""
    import psutil

    for p in processes:
        with contextlib.suppress(psutil.Error):
            for thread in p.threads():
                with contextlib.suppress(OSError):  # it ended meanwhile
                    os.sched_setaffinity(thread.id, cpus)


def _kill_trials(home: Path) -> None:
    """Kill what is left of the trials (a broken run's: trials outlive a stopped master, to
    be picked up by the next one, and these would load the machine for the next figure)."""
    import signal

    import psutil

    for p in psutil.process_iter(["pid", "cmdline"]):
        if str(home) in " ".join(p.info["cmdline"] or []):
            try:
                os.killpg(p.pid, signal.SIGKILL)  # a supervisor leads its run's group
            except OSError:
                pass


def _stored(
    home: Path, db_url: str | None
) -> tuple[int, list[float], list[float], list[float], int]:
    """Training rows stored, each one's latency in ms (reported_at - sent), the master's
    part of it (reported_at - shipped: from the batch's sending to the insert), its ``sent``
    time, and the number of batches they came in (the master's messages)."""
    from sqlalchemy import create_engine, text

    from trialkit.store import sqlite_url

    url = db_url.replace("postgresql://", "postgresql+psycopg://", 1) if db_url else None
    engine = create_engine(url or sqlite_url(home / "trialkit.db"))
    latencies, master_part, sent, batches = [], [], [], set()
    with engine.connect() as conn:
        rows = conn.execute(
            text('SELECT trial_id, reported_at, "values" FROM metrics WHERE "group" = \'training\'')
        )
        for trial_id, reported_at, values in rows:
            v = json.loads(values) if isinstance(values, str) else values
            latencies.append((reported_at - v["sent"]) * 1e3)
            master_part.append((reported_at - v["shipped"]) * 1e3)
            sent.append(v["sent"])
            batches.add((trial_id, v["shipped"]))
    engine.dispose()
    return len(latencies), latencies, master_part, sent, len(batches)


def _timeline(lat: list[float], sent: list[float], windows: int = 6) -> str:
    """p99 latency per slice of the reporting time (by when a report was made): the steady
    state apart from the start and the end of the run."""
    t0, t1 = min(sent), max(sent)
    width = (t1 - t0) / windows or 1.0
    slices: list[list[float]] = [[] for _ in range(windows)]
    for ms, t in zip(lat, sent, strict=True):
        slices[min(windows - 1, int((t - t0) / width))].append(ms)
    return " ".join(f"{_pct(s, 0.99):.0f}" if s else "-" for s in slices)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_ingest(
    kind: str,
    trials: int,
    rate: float,
    seconds: float,
    burst: int,
    db_url: str | None,
    db: Any = None,
    pin: tuple[set[int], set[int]] | None = None,
) -> dict[str, Any]:
    """One ingest run; ``db``: the PostgreSQL server (its CPU time and processes); ``pin``: the
    master's CPUs and the trials' CPUs from the go on."""
    import psutil

    from trialkit.client import start_background, stop_master

    with tempfile.TemporaryDirectory(prefix=f"trialkit-bench-scale-{kind}-") as tmp_s:
        tmp = Path(tmp_s)
        home, sync = tmp / "home", tmp / "sync"
        sync.mkdir()
        cfg, model = _experiment(tmp, trials, rate, seconds, burst, sync)
        env = clean_env(home)
        if db_url:
            os.environ["TRIALKIT_DB"] = env["TRIALKIT_DB"] = db_url
        else:
            os.environ.pop("TRIALKIT_DB", None)
        client = start_background(home, slots=trials)
        try:
            pid = int(json.loads((home / "master.json").read_text())["pid"])
            sampler = Sampler(pid)
            sampler.start()
            made = subprocess.run(
                [sys.executable, "-m", "trialkit.cli", "experiment", "create", str(cfg), str(model)],
                env=env, capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            found = re.search(r"Created experiment (\d+)", made.stdout)
            if not found:
                raise BenchmarkBroken(f"experiment create failed:\n{made.stdout}{made.stderr}")
            t_ready = time.monotonic()
            _wait(lambda: len(list(sync.glob("ready-*"))) >= trials, 900, f"{trials} trials ready")
            ready_s = time.monotonic() - t_ready
            if pin:
                master = psutil.Process(pid)
                _pin([master, *(db.processes() if db else [])], pin[0])
                _pin(master.children(recursive=True), pin[1])  # the runs
            cpu0, t0 = sampler.cpu(), time.monotonic()
            db0 = db.cpu_seconds() if db else 0.0
            (sync / "go").touch()
            _wait(
                lambda: len(list(sync.glob("done-*.json"))) >= trials,
                seconds * 3 + 300,
                f"{trials} trials done",
            )
            cpu1, t1 = sampler.cpu(), time.monotonic()
            db1 = db.cpu_seconds() if db else 0.0
            exp = int(found.group(1))
            _wait(
                lambda: (
                    client.request("GET", f"/api/v1/experiments/{exp}")["experiment"]["state"]
                    in ("COMPLETED", "ERROR", "CANCELED")
                ),
                300,
                "the experiment to end",
            )
            state = client.request("GET", f"/api/v1/experiments/{exp}")["experiment"]["state"]
            sampler.stop.set()
        finally:
            client.close()
            stop_master(home)
            _kill_trials(home)
        done = [json.loads(p.read_text()) for p in sync.glob("done-*.json")]
        reported = sum(d["reported"] for d in done)
        stored, lat, master_part, sent, batches = _stored(home, db_url)
        return {
            "store": kind,
            "state": state,
            "trials": trials,
            "ready_s": ready_s,
            "reported": reported,
            "stored": stored,
            "window_s": t1 - t0,
            "rows_per_s": reported / (t1 - t0),
            "batches_per_s": batches / (t1 - t0),
            "max_behind_s": max(d["behind"] for d in done),
            "p50_ms": _pct(lat, 0.50),
            "p99_ms": _pct(lat, 0.99),
            "max_ms": max(lat),
            "post_p50_ms": _pct(master_part, 0.50),
            "post_p99_ms": _pct(master_part, 0.99),
            "timeline": _timeline(lat, sent),
            "cpu_cores": (cpu1 - cpu0) / (t1 - t0),
            "db_cores": (db1 - db0) / (t1 - t0) if db else None,
            "trials_cpu_cores": sum(d["cpu"] for d in done) / (t1 - t0),
            "peak_rss_mb": sampler.peak_rss / 2**20,
        }


def print_ingest(
    rows: list[dict[str, Any]],
    rate: float,
    seconds: float,
    burst: int,
    pin: tuple[set[int], set[int]] | None = None,
) -> None:
    print(
        f"ingest: N trials x {rate:g} metrics/s (in bursts of {burst}) x {seconds:g} s; "
        f"goal rows stored/reported = 1.0, p99 < {GOAL_P99_MS:.0f} ms"
    )
    if pin:
        print(
            f"pinned from the go on: the master and the database on CPUs {_cpu_list(pin[0])}, "
            f"the trials on CPUs {_cpu_list(pin[1])}"
        )
    head = (
        f"{'store':<10} {'N':>4} {'state':>9} {'reported':>9} {'stored/rep':>10} {'rows/s':>8} {'msgs/s':>7} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'send p50':>8} {'send p99':>8} {'behind s':>8} {'cpu cores':>9} {'db cores':>8} {'trials cpu':>10} {'rss MB':>7} {'ready s':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['store']:<10} {r['trials']:>4} {r['state']:>9} {r['reported']:>9,} "
            f"{r['stored'] / max(r['reported'], 1):>10.4f} {r['rows_per_s']:>8,.0f} "
            f"{r['batches_per_s']:>7,.0f} {r['p50_ms']:>8.1f} "
            f"{r['p99_ms']:>8.1f} {r['max_ms']:>8.1f} {r['post_p50_ms']:>8.1f} {r['post_p99_ms']:>8.1f} {r['max_behind_s']:>8.2f} {r['cpu_cores']:>9.2f} "
            f"{'-' if r['db_cores'] is None else format(r['db_cores'], '.2f'):>8} "
            f"{r['trials_cpu_cores']:>10.2f} {r['peak_rss_mb']:>7.0f} {r['ready_s']:>7.1f}"
        )
    for r in rows:
        print(f"p99 ms per sixth of the reporting time, {r['store']}: {r['timeline']}")
    print("p50/p99/max: report_training_metrics() call -> row inserted by the master (end to end,")
    print("  including the Core API shipper's batching wait, 50 ms at most over the stream); send")
    print("  p50/p99: the batch sent -> its rows inserted (the network and the master's part)")
    print("msgs/s: the batches (stream messages) the master stored / the same window")
    print("behind s: the most a trial's report call ran late of its schedule (the trial starved)")
    print("cpu cores: the master's CPU time / wall time over the reporting window; rss: its peak")
    print("db cores: the PostgreSQL server's CPU time (all its processes) / the same window")
    print("trials cpu: the trial processes' CPU time (reporting until delivered) / the same window")


# Scheduling ---------------------------------------------------------------------------------


SCHED_CONFIG = {
    "name": "bench-scale-scheduling",
    "entrypoint": "python3 train.py",
    "hyperparameters": {"lr": {"type": "log", "minval": -5, "maxval": -1, "base": 10}},
    "searcher": {
        "name": "random",
        "metric": "loss",
        "max_trials": SCHED_TRIALS,
        "max_concurrent_trials": SCHED_TRIALS,
    },
}


def searcher_alone() -> float:
    """Seconds for the pure random search to produce its 1,000 trials (Create + created)."""
    from trialkit.searcher import Create, make_search_method

    t0 = time.perf_counter()
    method = make_search_method(SCHED_CONFIG["searcher"], SCHED_CONFIG["hyperparameters"], 1)
    creates = [op for op in method.initial_operations() if isinstance(op, Create)]
    for op in creates:
        method.on_trial_created(op.request_id)
    took = time.perf_counter() - t0
    if len(creates) != SCHED_TRIALS:
        raise BenchmarkBroken(f"the searcher created {len(creates)} trials, not {SCHED_TRIALS}")
    return took


def place_alone(repeats: int = 20) -> float:
    """Seconds (median of ``repeats``) for ``place`` to put 1,000 requests on 1,000 slots."""
    from trialkit.master.engine._scheduling import Request, place

    queue = [Request(i, 1, 1) for i in range(SCHED_TRIALS)]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        placed = place(range(SCHED_TRIALS), queue, time.monotonic())
        times.append(time.perf_counter() - t0)
        if len(placed) != SCHED_TRIALS:
            raise BenchmarkBroken(f"place placed {len(placed)} of {SCHED_TRIALS}")
    return statistics.median(times)


def engine_schedule(kind: str, db_url: str | None) -> dict[str, float]:
    """The master's engine: the experiment started (searcher driver + 1,000 trial rows), then
    one ``schedule`` placing all 1,000 on free slots, each launch recorded in the store."""
    from trialkit._modeldir import pack
    from trialkit.master.engine._engine import Engine, EngineSettings
    from trialkit.master.runs._processes import TrialProcess
    from trialkit.master.search._create import prepare_experiment
    from trialkit.store import Store, TrialState

    with tempfile.TemporaryDirectory(prefix="trialkit-bench-sched-") as tmp_s:
        home = Path(tmp_s) / "home"
        model = Path(tmp_s) / "model"
        model.mkdir()
        (model / "train.py").write_text("pass\n")
        store = Store(db_url) if db_url else Store.at(home)
        try:
            engine = Engine(
                store,
                EngineSettings(home=home, slots=SCHED_TRIALS),
                "http://127.0.0.1:9",
                "unused",
                home / "master.json",
            )
            launched: list[int] = []

            def record(
                exp: Any, trial: Any, run_id: int, slots: list[int], pool: Any = None
            ) -> TrialProcess:
                launched.append(trial.id)
                tdir = home / "trials" / str(trial.id)
                return TrialProcess(
                    trial_id=trial.id, experiment_id=exp.id, run_id=run_id, pid=os.getpid(),
                    started=time.time(), exit_file=tdir / "exit", log_file=tdir / "log", tag="",
                )  # fmt: skip

            engine._runs.start = record  # type: ignore[method-assign]
            archive = pack(model)
            config, _ = prepare_experiment(
                dict(SCHED_CONFIG), SCHED_TRIALS, home, model_def=archive
            )
            t0 = time.perf_counter()
            exp = store.create_experiment(name="sched", config=config.as_dict(), model_def=archive)
            engine.start_experiment(exp)
            started = time.perf_counter() - t0
            queued = [t for t in store.list_trials(exp.id) if t.state is TrialState.ACTIVE]
            if len(queued) != SCHED_TRIALS:
                raise BenchmarkBroken(f"{len(queued)} trials queued, not {SCHED_TRIALS}")
            t0 = time.perf_counter()
            with engine._lock:
                engine._supervision.schedule()
            scheduled = time.perf_counter() - t0
            if len(set(launched)) != SCHED_TRIALS:
                raise BenchmarkBroken(f"schedule placed {len(launched)} of {SCHED_TRIALS}")
            return {"start_s": started, "schedule_s": scheduled}
        finally:
            store.close()


def print_scheduling(
    searcher_s: float, place_s: float, engine: dict[str, dict[str, float]]
) -> None:
    print(
        f"scheduling: {SCHED_TRIALS:,} queued single-slot trials onto {SCHED_TRIALS:,} free slots"
    )
    print(
        f"  searcher alone (random, {SCHED_TRIALS:,} trials created):  {searcher_s * 1e3:8.1f} ms"
    )
    print(
        f"  place() alone:                                {place_s * 1e3:8.2f} ms "
        f"({SCHED_TRIALS / place_s:,.0f} decisions/s)"
    )
    for kind, e in engine.items():
        print(
            f"  engine on {kind:<8}: experiment start (searcher driver + {SCHED_TRIALS:,} trial rows) "
            f"{e['start_s'] * 1e3:8.1f} ms; schedule() {e['schedule_s'] * 1e3:8.1f} ms "
            f"({SCHED_TRIALS / e['schedule_s']:,.0f} decisions/s)"
        )


def _cpu_list(cpus: set[int]) -> str:
    return ",".join(map(str, sorted(cpus)))


def _cpus(parser: argparse.ArgumentParser, option: str, value: str | None) -> set[int] | None:
    """``value`` ("0,1") as a set of this machine's CPUs; a parser error naming ``option``."""
    if value is None:
        return None
    usable = os.sched_getaffinity(0)
    try:
        cpus = {int(c) for c in value.split(",")}
    except ValueError:
        parser.error(f"{option}: give CPU numbers separated by commas, e.g. 0,1 (got {value!r})")
    if not cpus <= usable:
        unknown, known = _cpu_list(cpus - usable), _cpu_list(usable)
        parser.error(f"{option}: CPU {unknown} is not usable here (usable: {known})")
    return cpus


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="concurrent trial processes (N)")
    parser.add_argument("--rate", type=float, default=100.0, help="metrics/s per trial (R)")
    parser.add_argument("--seconds", type=float, default=60.0, help="reporting time (T)")
    parser.add_argument(
        "--burst",
        type=int,
        default=10,
        help="reports per wake-up of a trial (B): a sleeping Python process costs ~50 us of CPU "
        "per wake-up on these VMs, so B=1 at N=200 x R=100 spends ~1 core on the load itself",
    )
    parser.add_argument("--skip-sqlite", action="store_true")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--skip-scheduling", action="store_true")
    parser.add_argument("--master-cpus", help="ingest: the master's (and the database's) CPUs")
    parser.add_argument("--trial-cpus", help="ingest: the trials' CPUs (with --master-cpus)")
    args = parser.parse_args()
    master_cpus = _cpus(parser, "--master-cpus", args.master_cpus)
    trial_cpus = _cpus(parser, "--trial-cpus", args.trial_cpus)
    if (master_cpus is None) != (trial_cpus is None):
        parser.error("--master-cpus and --trial-cpus go together")
    pin = (master_cpus, trial_cpus) if master_cpus and trial_cpus else None
    sys.path.insert(0, str(REPO))
    server = None
    # (store, a new database's URL, the database server): None for SQLite
    kinds: list[tuple[str, Any, Any]] = [] if args.skip_sqlite else [("sqlite", None, None)]
    try:
        if not args.skip_postgres:
            from tests.postgres_server import PostgresServer

            server = PostgresServer()
            kinds.append(("postgresql", server.new_database, server))
        if not args.skip_scheduling:
            engine = {k: engine_schedule(k, new() if new else None) for k, new, _ in kinds}
            print_scheduling(searcher_alone(), place_alone(), engine)
            print()
        if not args.skip_ingest:
            rows = [
                run_ingest(
                    k,
                    args.trials,
                    args.rate,
                    args.seconds,
                    args.burst,
                    new() if new else None,
                    db,
                    pin,
                )
                for k, new, db in kinds
            ]
            print_ingest(rows, args.rate, args.seconds, args.burst, pin)
            if any(r["stored"] != r["reported"] for r in rows):
                print("rows lost (stored != reported)", file=sys.stderr)
    except BenchmarkBroken as e:
        print(f"benchmark broken: {e}", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
