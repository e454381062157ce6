"""Fault injection (issue 12): kill -9 of the trial, a distributed worker, the trial's supervisor
and the master at seeded random points of training, checkpointing and reporting; then disk full
and read-only checkpoint storage.

After every fault: the experiment ends, every metric batch the master acknowledged to the trial
is stored exactly once (the trial writes what was acknowledged to a side file), no metric row is
stored twice, and every registered checkpoint has all its files at their sizes. A summary line
with the figures is printed when the module ends.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from trialkit.master import start_background
from trialkit.storage import PARTIALS

from .conftest import Master, write_script

pytestmark = pytest.mark.integration

DEFAULT_SEEDS = range(4)
SLOW_SEEDS = range(4, 24)  # 20 more per target under -m slow

# A Core API trial that reports every step and checkpoints every CKPT_EVERY steps (a few files,
# written with pauses so that a kill can land mid-checkpoint). It appends what happens to
# $EVENTS ("run rank phase n" lines, for the test to time its kill) and every metric report the
# master acknowledged to $ACKED ("run group steps"). With WORKERS=2 it is its own launcher: it
# starts two ranks and fails as soon as one of them does.
TRIAL = r"""
import json, os, subprocess, sys, time
import trialkit as det
from trialkit import core

TOTAL = int(os.environ["TOTAL"])
CKPT_EVERY = int(os.environ.get("CKPT_EVERY", "5"))
CKPT_FILES = int(os.environ.get("CKPT_FILES", "3"))
CKPT_BYTES = int(os.environ.get("CKPT_BYTES", "65536"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0.03"))
WORKERS = int(os.environ.get("WORKERS", "1"))
info = det.get_cluster_info()
run = info.trial.trial_run_id


def note(path, line):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def launch():
    procs = [
        subprocess.Popen([sys.executable, __file__, "worker", str(r)]) for r in range(WORKERS)
    ]
    while True:
        codes = [p.poll() for p in procs]
        failed = [c for c in codes if c not in (None, 0)]
        if failed or all(c == 0 for c in codes):
            for p in procs:
                if p.poll() is None:
                    p.kill()
            for p in procs:
                p.wait()
            sys.exit(failed[0] if failed else 0)
        time.sleep(0.02)


def train(rank):
    dist = None
    if WORKERS > 1:
        dist = core.DistributedContext(
            rank=rank, size=WORKERS, local_rank=rank, local_size=WORKERS,
            cross_rank=0, cross_size=1, chief_ip="127.0.0.1",
        )
    with core.init(distributed=dist) as ctx:
        rank = ctx.distributed.rank
        event = lambda phase, n: note(os.environ["EVENTS"], f"{run} {rank} {phase} {n}")
        if rank == 0:
            ctx._shipper.add_sink(
                lambda batch: [
                    note(os.environ["ACKED"], f"{run} {r['group']} {r['steps_completed']}")
                    for r in batch
                ]
            )
        event("pid", os.getpid())
        step = 0
        if info.latest_checkpoint:
            with ctx.checkpoint.restore_path(info.latest_checkpoint) as path:
                step = json.loads((path / "state.json").read_text())["step"]
        print(f"run {run} rank {rank} starts at step {step}", flush=True)
        while step < TOTAL:
            event("train", step + 1)
            time.sleep(STEP_SECONDS)
            step += 1
            if WORKERS > 1:
                assert sum(ctx.distributed.allgather(step)) == WORKERS * step
            if rank == 0:
                event("report", step)
                ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
            if step % CKPT_EVERY == 0:
                event("ckpt", step)
                shard = WORKERS > 1
                with ctx.checkpoint.store_path({"steps_completed": step}, shard=shard) as (path, _):
                    for i in range(CKPT_FILES):
                        (path / f"rank{rank}-part{i}.bin").write_bytes(os.urandom(CKPT_BYTES))
                        time.sleep(0.01)
                    if rank == 0:
                        (path / "state.json").write_text(json.dumps({"step": step}))
        if rank == 0:
            event("report", "validation")
            ctx.train.report_validation_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
        event("done", step)
    print(f"run {run} rank {rank} done", flush=True)


if len(sys.argv) > 2 and sys.argv[1] == "worker":
    train(int(sys.argv[2]))
elif WORKERS > 1:
    launch()
else:
    train(0)
"""

TOTAL = 30
FIGURES: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _summary(request: pytest.FixtureRequest) -> Iterator[None]:
    """The figures the closing note quotes, printed once the module's tests are done."""
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    line = (
        f"fault injection: {FIGURES['faults']} faults injected over {FIGURES['experiments']} "
        f"experiments; acknowledged metrics {FIGURES['acked']}, lost {FIGURES['lost']}, "
        f"duplicated rows {FIGURES['duplicated']}; checkpoints registered "
        f"{FIGURES['checkpoints']}, partial {FIGURES['partial']}; experiments with two runs at once "
        f"{FIGURES['overlapping_runs']}; not ended {FIGURES['not_ended']}; unregistered .partial "
        f"directories left {FIGURES['leftover_partial_dirs']}"
    )
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        print(line)
        return
    with capture.global_and_fixture_disabled():  # teardown output is captured otherwise
        reporter.write_line("")
        reporter.write_line(line)


class Run:
    """One experiment of the fault suite: its side files and what it reported."""

    def __init__(self, master: Master, tmp: Path, **env: object) -> None:
        self.master = master
        self.model = tmp / "model"
        write_script(self.model, "trial.py", TRIAL)
        self.events = tmp / "events"
        self.acked = tmp / "acked"
        self.storage = tmp / "checkpoints"
        self.storage.mkdir()
        self.env = {"TOTAL": TOTAL, "EVENTS": self.events, "ACKED": self.acked, **env}

    def config(self, **extra: Any) -> dict[str, Any]:
        return {
            "name": "faults",
            "entrypoint": "python3 trial.py",
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": TOTAL}},
            "max_restarts": 3,
            "checkpoint_storage": {
                "type": "shared_fs",
                "host_path": str(self.storage),
                "save_trial_latest": 100,
                "save_trial_best": 100,
                "save_experiment_best": 100,
            },
            "environment": {
                "environment_variables": [f"{k}={v}" for k, v in self.env.items()],
            },
            **extra,
        }

    def wait_event(self, run: int, rank: int, phase: str, n: object, timeout: float = 120) -> int:
        """Wait until the trial logs the event; return the pid that logged its start."""
        want = f"{run} {rank} {phase} {n}"
        pid_prefix = f"{run} {rank} pid "
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = self.events.read_text().splitlines() if self.events.exists() else []
            if want in lines:
                [pid] = [int(ln.split()[-1]) for ln in lines if ln.startswith(pid_prefix)]
                return pid
            time.sleep(0.005)
        raise AssertionError(f"timed out after {timeout}s waiting for event {want!r}")

    def check(self, exp: int, timeout: float = 180) -> dict[str, Any]:
        """The invariants after a fault; counts go into FIGURES."""
        FIGURES["experiments"] += 1
        try:
            desc = self.master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout)
        except AssertionError:
            FIGURES["not_ended"] += 1
            raise
        [trial] = desc["trials"]
        rows = self.master.client.request("GET", f"/api/v1/trials/{trial['id']}/metrics")["metrics"]
        stored = Counter((m["run_id"], m["group"], m["steps_completed"]) for m in rows)
        acked = self.acked_reports()
        lost = sorted(r for r in acked if stored[r] == 0)
        duplicated = sorted(r for r, n in stored.items() if n > 1)
        partial = self.partial_checkpoints(desc["checkpoints"])
        FIGURES["acked"] += len(acked)
        FIGURES["lost"] += len(lost)
        FIGURES["duplicated"] += sum(stored[r] - 1 for r in duplicated)
        FIGURES["checkpoints"] += len(desc["checkpoints"])
        FIGURES["partial"] += len(partial)
        # Not asserted here (issue 12, item 12 covers cleaning them): reported in the summary.
        FIGURES["leftover_partial_dirs"] += len(list(self.storage.glob(f"{PARTIALS}/*")))
        overlaps = self.overlapping_runs()
        FIGURES["overlapping_runs"] += bool(overlaps)
        assert not overlaps, f"a run kept going after the next one started: {overlaps}"
        assert not lost, f"acknowledged metrics missing from the store: {lost}"
        assert not duplicated, f"metric rows stored more than once: {duplicated}"
        assert not partial, f"registered checkpoints with missing or short files: {partial}"
        return desc

    def overlapping_runs(self) -> list[str]:
        """Events of a run logged after a later run had started (two runs at once)."""
        latest = 0
        out = []
        for line in self.events.read_text().splitlines() if self.events.exists() else []:
            run = int(line.split()[0])
            if run < latest:
                out.append(line)
            latest = max(latest, run)
        return out

    def acked_reports(self) -> set[tuple[int, str, int]]:
        out = set()
        text = self.acked.read_text() if self.acked.exists() else ""
        for line in text.splitlines(keepends=True):
            parts = line.split()
            if line.endswith("\n") and len(parts) == 3:  # a line cut by the kill is skipped
                out.add((int(parts[0]), parts[1], int(parts[2])))
        return out

    def partial_checkpoints(self, checkpoints: list[dict[str, Any]]) -> list[str]:
        bad = []
        for c in checkpoints:
            if c["state"] != "COMPLETED":
                continue
            root = self.storage / c["uuid"]
            for rel, size in c["resources"].items():
                path = root / rel
                ok = (
                    path.is_dir()
                    if rel.endswith("/")
                    else (path.is_file() and path.stat().st_size == size)
                )
                if not ok:
                    bad.append(f"{c['uuid']}/{rel}")
        return bad


def _restart_master(master: Master) -> None:
    master.client.close()
    master.client = start_background(master.home, slots=2)


def _supervisor_of(pid: int) -> psutil.Process:
    """The trial supervisor (master/_supervise.py) above a trial process."""
    for parent in psutil.Process(pid).parents():
        if any(arg.endswith("_supervise.py") for arg in parent.cmdline()):
            return parent
    raise AssertionError(f"no supervisor above pid {pid}")


def _kill_point(
    rng: random.Random, phases: tuple[str, ...] = ("train", "report", "ckpt")
) -> tuple[str, int]:
    """A seeded random moment of run 1: (phase, step)."""
    phase = rng.choice(phases)
    if phase == "ckpt":
        return phase, rng.randrange(5, TOTAL, 5)
    return phase, rng.randint(1, TOTAL - 1)


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    FIGURES["faults"] += 1


def _seeds(default: range, slow: range) -> list[Any]:
    return [*default, *(pytest.param(s, marks=pytest.mark.slow) for s in slow)]


@pytest.mark.parametrize("seed", _seeds(DEFAULT_SEEDS, SLOW_SEEDS))
def test_kill_the_trial(master: Master, tmp_path: Path, seed: int) -> None:
    rng = random.Random(f"trial-{seed}")
    run = Run(master, tmp_path)
    exp = master.create(run.config(), run.model)
    phase, step = _kill_point(rng)
    _kill(run.wait_event(1, 0, phase, step))
    desc = run.check(exp)
    assert desc["experiment"]["state"] == "COMPLETED"
    assert desc["trials"][0]["restarts"] >= 1


@pytest.mark.parametrize("seed", _seeds(DEFAULT_SEEDS, SLOW_SEEDS))
def test_kill_a_distributed_worker(master: Master, tmp_path: Path, seed: int) -> None:
    rng = random.Random(f"worker-{seed}")
    run = Run(master, tmp_path, WORKERS=2)
    exp = master.create(run.config(resources={"slots_per_trial": 2}), run.model)
    phase, step = _kill_point(rng, ("train", "ckpt"))
    _kill(run.wait_event(1, 1, phase, step))
    desc = run.check(exp)
    assert desc["experiment"]["state"] == "COMPLETED"
    assert desc["trials"][0]["restarts"] >= 1


@pytest.mark.parametrize("seed", _seeds(DEFAULT_SEEDS, SLOW_SEEDS))
def test_kill_the_supervisor(master: Master, tmp_path: Path, seed: int) -> None:
    rng = random.Random(f"supervisor-{seed}")
    run = Run(master, tmp_path)
    exp = master.create(run.config(), run.model)
    phase, step = _kill_point(rng)
    trial_pid = run.wait_event(1, 0, phase, step)
    _kill(_supervisor_of(trial_pid).pid)
    desc = run.check(exp)
    assert desc["experiment"]["state"] == "COMPLETED"
    # Two runs never train at once: the first is gone before another one starts.
    assert not psutil.pid_exists(trial_pid) or psutil.Process(trial_pid).status() == "zombie"


@pytest.mark.parametrize("seed", _seeds(DEFAULT_SEEDS, SLOW_SEEDS))
def test_kill_the_master(master: Master, tmp_path: Path, seed: int) -> None:
    rng = random.Random(f"master-{seed}")
    run = Run(master, tmp_path)
    exp = master.create(run.config(), run.model)
    phase, step = _kill_point(rng)
    run.wait_event(1, 0, phase, step)
    _kill(master.pid())
    time.sleep(rng.uniform(0.0, 2.0))  # the trial keeps training and retrying its reports
    _restart_master(master)
    desc = run.check(exp)
    assert desc["experiment"]["state"] == "COMPLETED"


# Storage that fails ------------------------------------------------------------------------------


def test_disk_full_is_a_clear_error_and_registers_nothing_half_written(
    master: Master, tmp_path: Path
) -> None:
    """RLIMIT_FSIZE (ulimit -f, set by the startup hook) makes checkpoint writes fail with
    EFBIG, as a full disk fails them with ENOSPC: the same path through the storage code."""
    run = Run(master, tmp_path, CKPT_BYTES=2 * 2**20)
    (run.model / "startup-hook.sh").write_text("ulimit -f 2048\n")  # 1 MiB in 512-byte blocks
    exp = master.create(run.config(max_restarts=0), run.model)
    FIGURES["faults"] += 1
    desc = run.check(exp)
    assert desc["experiment"]["state"] == "ERROR"
    assert desc["checkpoints"] == []
    assert list(run.storage.iterdir()) == [], "a half-written checkpoint was left in storage"
    log = _log(master, desc["trials"][0]["id"])
    assert "File too large" in log, log[-2000:]
    # The reason is recorded with the trial, where describe shows it (issue 13, item 1): one
    # line naming the checkpoint, the OS reason and what to do.
    assert "File too large" in (desc["trials"][0].get("error") or ""), desc["trials"][0]
    _assert_storage_error(desc["trials"][0], run.storage, "File too large (EFBIG)", "ulimit -f")


def test_read_only_storage_is_a_clear_error_and_registers_nothing(
    master: Master, tmp_path: Path
) -> None:
    """The trial runs in its own mount namespace where the checkpoint directory is a read-only
    bind mount (EROFS), as on a filesystem remounted read-only."""
    ro = _read_only_entrypoint(tmp_path / "probe")
    run = Run(master, tmp_path)
    cfg = run.config(max_restarts=0, entrypoint=ro.format(path=run.storage))
    exp = master.create(cfg, run.model)
    FIGURES["faults"] += 1
    desc = run.check(exp)
    assert desc["experiment"]["state"] == "ERROR"
    assert desc["checkpoints"] == []
    assert list(run.storage.iterdir()) == []
    log = _log(master, desc["trials"][0]["id"])
    assert "Read-only file system" in log and str(run.storage) in log, log[-2000:]
    assert "Read-only file system" in (desc["trials"][0].get("error") or ""), desc["trials"][0]
    _assert_storage_error(
        desc["trials"][0], run.storage, "Read-only file system (EROFS)", "remount it read-write"
    )


def _assert_storage_error(trial: dict[str, Any], storage: Path, reason: str, todo: str) -> None:
    """The trial's recorded error is the storage manager's one line, naming the checkpoint."""
    error = trial.get("error") or ""
    pattern = (
        rf"trialkit\.storage\.CheckpointStorageError: cannot save checkpoint "
        rf"{re.escape(str(storage))}/[0-9a-f-]{{36}}: {re.escape(reason)}; "
        rf"[^;\n]*{re.escape(todo)}[^;\n]*, or choose another checkpoint_storage\.host_path"
    )
    assert re.fullmatch(pattern, error), error


def _read_only_entrypoint(probe: Path) -> str:
    """A shell command that runs the trial with ``{path}`` mounted read-only; skips the test
    where this machine cannot make a private mount namespace (not root, no unshare)."""
    template = (
        "unshare --mount --propagation private sh -c "
        "'mount --bind -o ro {path} {path} && exec python3 trial.py'"
    )
    if shutil.which("unshare") is None:
        pytest.skip("read-only storage needs unshare(1) for a private read-only bind mount")
    probe.mkdir()
    test = template.replace("exec python3 trial.py", f"touch {probe}/x").format(path=probe)
    out = subprocess.run(["sh", "-c", test], capture_output=True, text=True, timeout=30)
    if "Read-only file system" not in out.stderr:
        pytest.skip(f"cannot make a read-only bind mount here: {out.stderr.strip()}")
    return template


def _log(master: Master, trial_id: int) -> str:
    logs = master.client.request("GET", f"/api/v1/trials/{trial_id}/logs")["logs"]
    return "\n".join(ln["line"] for ln in logs)
