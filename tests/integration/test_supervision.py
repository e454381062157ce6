"""Trial supervision on the worst day, with a real master and real processes: runs that cannot
start, trials that fail after finishing, supervisors killed with SIGKILL, processes that leave
the trial's group, huge logs, restarts. Each test ends with the experiment in a terminal state
and says what must (not) be left behind, so the fault suites can reuse them."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import signal
import tarfile
from pathlib import Path
from typing import Any

import psutil
import pytest

from trialkit.storage import PARTIALS

from .conftest import Master, checkpoint_entries, keep_all_checkpoints, write_script

pytestmark = pytest.mark.integration

TERMINAL = {"COMPLETED", "ERROR", "CANCELED"}

# A Core API trial with knobs (environment variables): trains TOTAL steps, checkpointing every 5
# and resuming from the latest checkpoint; the rest of the knobs are faults.
TRIAL = """
import json, os, subprocess, sys, time
import trialkit as det
from trialkit import core

TOTAL = int(os.environ.get("TOTAL", "10"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0.01"))
info = det.get_cluster_info()
run_id = info.trial.trial_run_id
if os.environ.get("SETSID_CHILD") and run_id == 1:
    child = subprocess.Popen(["setsid", "sleep", os.environ["SETSID_CHILD"]])
    print(f"setsid child {child.pid}", flush=True)
if os.environ.get("SILENT_FAIL"):
    raise RuntimeError(os.environ["SILENT_FAIL"])
with core.init() as ctx:
    step = 0
    if info.latest_checkpoint:
        with ctx.checkpoint.restore_path(info.latest_checkpoint) as path:
            step = json.loads((path / "state.json").read_text())["step"]
    print(f"run {run_id} starts at step {step}", flush=True)
    while step < TOTAL:
        time.sleep(STEP_SECONDS)
        step += 1
        ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
        if run_id == 1 and step == int(os.environ.get("CRASH_AT", "0")):
            sys.exit(3)
        if step % 5 == 0:
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _):
                (path / "state.json").write_text(json.dumps({"step": step}))
                if run_id == 1 and step == int(os.environ.get("HANG_IN_CHECKPOINT_AT", "0")):
                    print("writing checkpoint", flush=True)
                    time.sleep(600)
    ctx.train.report_validation_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    print(f"run {run_id} done", flush=True)
"""


def config(name: str = "sup", **env: object) -> dict[str, Any]:
    return {
        "name": name,
        "entrypoint": "python3 trial.py",
        "searcher": {"name": "single", "metric": "loss"},
        "max_restarts": env.pop("max_restarts", 5),
        "environment": {"environment_variables": [f"{k}={v}" for k, v in env.items()]},
    }


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    write_script(d, "trial.py", TRIAL)
    return d


def logs(master: Master, trial_id: int) -> list[str]:
    """Every stored log line of the trial, fetched a page at a time."""
    lines: list[str] = []
    after = 0
    while True:
        page = master.client.request(
            "GET",
            f"/api/v1/trials/{trial_id}/logs",
            params={"after_id": after, "limit": 50_000},
            timeout=120,
        )["logs"]
        if not page:
            return lines
        lines.extend(ln["line"] for ln in page)
        after = page[-1]["id"]


def post_experiment(master: Master, cfg: dict[str, Any], archive: bytes) -> int:
    """Create an experiment through the REST API, as a client other than the CLI could."""
    resp = master.client.request(
        "POST",
        "/api/v1/experiments",
        json_body={"config": cfg, "model_def": base64.b64encode(archive).decode()},
    )
    return int(resp["experiment"]["id"])


def tar_that_cannot_be_written(model_dir: Path) -> bytes:
    """Passes the create route's archive check, fails when unpacked: a file under a file."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(model_dir / "trial.py", arcname="trial.py")
        under = tarfile.TarInfo("trial.py/data")
        under.size = 1
        tar.addfile(under, io.BytesIO(b"x"))
    return buf.getvalue()


def assert_good_experiment_completes(master: Master, model_dir: Path) -> None:
    exp = master.create(config("good"), model_dir)
    desc = master.wait_state(exp, TERMINAL, timeout=120)
    assert desc["experiment"]["state"] == "COMPLETED", desc


# Item 2: a run that cannot start --------------------------------------------------------------


def test_unlaunchable_trial_fails_its_experiment_and_frees_the_slots(
    master: Master, model_dir: Path
) -> None:
    # Archives that are not a tarball or hold an absolute link are refused at create now
    # (tests/unit/test_create_archive.py); this one is only found when a trial starts.
    bad = tar_that_cannot_be_written(model_dir)
    # Two bad experiments would hold both of the master's slots if a failed launch leaked them.
    for _ in range(2):
        exp = post_experiment(master, config("bad"), bad)
        desc = master.wait_state(exp, TERMINAL, timeout=60)
        assert desc["experiment"]["state"] == "ERROR"
        error = desc["experiment"]["error"]
        assert error and "could not start" in error, error
        [trial] = desc["trials"]
        assert trial["state"] == "ERROR" and trial["pid"] is None
        assert "cannot be unpacked" in trial["error"], trial["error"]
    assert_good_experiment_completes(master, model_dir)


def test_dry_run_refuses_a_link_out_of_the_model_directory(
    master: Master, model_dir: Path, tmp_path: Path
) -> None:
    (model_dir / "data").symlink_to("/etc/hostname")
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(config()))
    for extra in (["--dry-run"], []):
        proc = master.cli("experiment", "create", str(cfg), str(model_dir), *extra, check=False)
        assert proc.returncode != 0
        assert "'data' is a symlink to the absolute path '/etc/hostname'" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert master.client.request("GET", "/api/v1/experiments")["experiments"] == []


def test_config_too_big_for_a_trial_environment_is_refused_at_create(
    master: Master, model_dir: Path, tmp_path: Path
) -> None:
    cfg = config()
    cfg["hyperparameters"] = {"blob": {"type": "const", "val": "x" * 140_000}}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(cfg))
    proc = master.cli("experiment", "create", str(path), str(model_dir), check=False)
    assert proc.returncode != 0
    assert "over the 128 KiB" in proc.stderr and "DET_EXPERIMENT_CONFIG" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert master.client.request("GET", "/api/v1/experiments")["experiments"] == []
    assert_good_experiment_completes(master, model_dir)


# Item 3: a failure after the last report_completed --------------------------------------------

OP_TRIAL = """
import sys
from trialkit import core

with core.init() as ctx:
    for op in ctx.searcher.operations():
        for step in range(1, op.length + 1):
            ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1 / step})
        op.report_completed(1.0 / op.length)
print("all ops done; now failing in teardown", flush=True)
sys.exit(3)
"""


def test_trial_failing_after_its_last_op_completed_ends_the_experiment(
    master: Master, tmp_path: Path
) -> None:
    d = tmp_path / "ops"
    write_script(d, "trial.py", OP_TRIAL)
    cfg = config("after-op")
    cfg["searcher"] = {"name": "single", "metric": "loss", "max_length": {"batches": 5}}
    exp = master.create(cfg, d)
    desc = master.wait_state(exp, TERMINAL, timeout=60)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    assert trial["state"] == "COMPLETED" and trial["restarts"] == 0 and trial["pid"] is None
    assert trial["error"].startswith("exit code 3; last output: all ops done"), trial["error"]


# Item 15 / issue 13 item 1 and 5: reasons recorded, restarts backed off -------------------------

RAISING_TRIAL = """
from trialkit import core
import trialkit as det

run_id = det.get_cluster_info().trial.trial_run_id
with core.init() as ctx:
    print(f"run {run_id} starts", flush=True)
    ctx.train.report_training_metrics(steps_completed=run_id, metrics={"loss": 1.0})
    raise ValueError(f"boom")
"""


def test_failed_trial_and_experiment_carry_the_reason_and_restarts_back_off(
    master: Master, tmp_path: Path
) -> None:
    d = tmp_path / "raise"
    write_script(d, "trial.py", RAISING_TRIAL)
    exp = master.create(config("raise", max_restarts=2), d)
    statuses: list[str] = []

    def in_second_back_off() -> bool:  # 2 s long: the trial says what it waits for
        statuses.append(master.describe(exp)["trials"][0]["status"] or "")
        return statuses[-1].endswith(", restart 2 of 2")

    master.wait_for(in_second_back_off, what="the second restart's back-off")
    assert re.fullmatch(r"restarting at \d\d:\d\d:\d\d, restart 2 of 2", statuses[-1])
    desc = master.wait_state(exp, TERMINAL, timeout=90)
    assert desc["experiment"]["state"] == "ERROR"
    assert desc["experiment"]["error"] == "trial 1 failed: ValueError: boom (restarted 2 times)"
    [trial] = desc["trials"]
    assert trial["state"] == "ERROR" and trial["error"] == "ValueError: boom"
    assert trial["status"] is None  # cleared when the restarted run started
    out = master.client.request("GET", f"/api/v1/trials/{trial['id']}/logs")["logs"]
    starts = [ln["ts"] for ln in out if ln["line"].startswith("run ") and "starts" in ln["line"]]
    assert len(starts) == 3
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert gaps[0] >= 1.0 and gaps[1] >= 2.0, gaps  # 1 s, then 2 s of back-off


def test_a_trial_failing_twice_the_same_way_before_reporting_is_not_restarted_again(
    master: Master, model_dir: Path
) -> None:
    exp = master.create(config("silent", SILENT_FAIL="no data at /nowhere"), model_dir)
    desc = master.wait_state(exp, TERMINAL, timeout=60)
    assert desc["experiment"]["state"] == "ERROR"
    [trial] = desc["trials"]
    assert trial["state"] == "ERROR" and trial["restarts"] == 1 and trial["run_id"] == 2
    assert trial["error"] == (
        "RuntimeError: no data at /nowhere (twice in a row before reporting anything)"
    )
    assert desc["experiment"]["error"].startswith("trial 1 failed: RuntimeError: no data")


# Item 4: the supervisor killed ---------------------------------------------------------------


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those of ``procs`` still running (same pid and start time, not a zombie)."""
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def metrics(master: Master, trial_id: int, group: str) -> list[dict[str, Any]]:
    path = f"/api/v1/trials/{trial_id}/metrics"
    return master.client.request("GET", path, params={"group": group})["metrics"]  # type: ignore[no-any-return]


def test_killing_the_supervisor_stops_the_whole_run_before_the_restart(
    master: Master, model_dir: Path
) -> None:
    # The setsid grandchild is out of the trial's group and outlives the trial process itself.
    cfg = config("sup-kill", TOTAL=60, STEP_SECONDS=0.05, SETSID_CHILD=600)
    exp = master.create(cfg, model_dir)
    master.wait_for(lambda: len(metrics(master, 1, "training")) >= 8, what="a checkpoint")
    supervisor = psutil.Process(master.describe(exp)["trials"][0]["pid"])
    run1 = supervisor.children(recursive=True)
    assert any(p.name() == "sleep" for p in run1) and len(run1) >= 2
    os.kill(supervisor.pid, signal.SIGKILL)
    master.wait_for(lambda: master.describe(exp)["trials"][0]["run_id"] == 2, what="restart")
    assert alive(run1) == [], "processes of the old run survive beside the restarted one"
    desc = master.wait_state(exp, TERMINAL, timeout=120)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    assert trial["restarts"] == 1 and trial["run_id"] == 2
    assert trial["error"].startswith("its supervisor was killed"), trial["error"]
    training = metrics(master, 1, "training")
    first_run2 = min(m["reported_at"] for m in training if m["run_id"] == 2)
    assert all(m["reported_at"] < first_run2 for m in training if m["run_id"] == 1)
    run2_steps = sorted(m["steps_completed"] for m in training if m["run_id"] == 2)
    assert run2_steps == list(range(run2_steps[0], 61)) and run2_steps[0] % 5 == 1
    [validation] = metrics(master, 1, "validation")
    assert validation["steps_completed"] == 60 and validation["run_id"] == 2
    assert not any(ln.startswith("run 1 done") for ln in logs(master, 1))


# Item 13: processes that left the trial's process group --------------------------------------


def test_kill_stops_processes_that_left_the_process_group(master: Master, model_dir: Path) -> None:
    exp = master.create(
        config("setsid", TOTAL=100_000, STEP_SECONDS=0.05, SETSID_CHILD=600), model_dir
    )
    master.wait_for(
        lambda: any(ln.startswith("setsid child ") for ln in logs(master, 1)), what="the child"
    )
    [line] = [ln for ln in logs(master, 1) if ln.startswith("setsid child ")]
    child = psutil.Process(int(line.split()[-1]))
    assert (
        child.name() == "sleep"
        and os.getpgid(child.pid) != master.describe(exp)["trials"][0]["pid"]
    )
    master.cli("experiment", "kill", str(exp))
    desc = master.wait_state(exp, TERMINAL, timeout=60)
    assert desc["experiment"]["state"] == "CANCELED"
    master.wait_for(lambda: not alive([child]), timeout=10, what="the setsid child to go")


# Item 6: the whole log, however long -----------------------------------------------------------

LOUD_TRIAL = """
import os, sys
n = int(os.environ["LINES"])
sys.stdout.write("".join(f"line {i:09d} " + "x" * 50 + "\\n" for i in range(n)))
sys.stdout.flush()
raise ValueError(f"after {n} lines")
"""


def _check_whole_log_is_stored(master: Master, tmp_path: Path, lines: int) -> None:
    d = tmp_path / "loud"
    write_script(d, "trial.py", LOUD_TRIAL)
    exp = master.create(config("loud", LINES=lines, max_restarts=0), d)
    desc = master.wait_state(exp, TERMINAL, timeout=300)
    assert desc["trials"][0]["error"] == f"ValueError: after {lines} lines"
    got = logs(master, 1)
    printed = [ln for ln in got if ln.startswith("line ")]
    assert len(printed) == lines
    assert printed[-1].startswith(f"line {lines - 1:09d} ")
    assert got[-1] == f"ValueError: after {lines} lines"
    assert "Traceback (most recent call last):" in got


def test_a_long_log_is_stored_whole_with_its_final_traceback(
    master: Master, tmp_path: Path
) -> None:
    _check_whole_log_is_stored(master, tmp_path, 200_000)


@pytest.mark.slow
def test_a_million_line_log_is_stored_whole(master: Master, tmp_path: Path) -> None:
    _check_whole_log_is_stored(master, tmp_path, 1_000_001)


# Item 7: a relative checkpoint host_path ---------------------------------------------------------


def test_relative_host_path_is_under_the_master_home_and_survives_a_restart(
    master: Master, model_dir: Path
) -> None:
    cfg = config("relative", TOTAL=12, CRASH_AT=8)
    cfg["checkpoint_storage"] = {"type": "shared_fs", "host_path": "my-ckpts"}
    exp = master.create(cfg, model_dir)
    desc = master.wait_state(exp, TERMINAL, timeout=90)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    assert trial["restarts"] == 1
    assert "run 2 starts at step 5" in logs(master, trial["id"])
    storage = desc["experiment"]["config"]["checkpoint_storage"]
    assert storage["host_path"] == str(master.home / "my-ckpts")
    latest = desc["trials"][0]["latest_checkpoint"]
    assert (master.home / "my-ckpts" / latest / "state.json").is_file()


# Item 12: leftovers of a run killed mid-save ------------------------------------------------------


def test_partial_checkpoint_of_a_run_killed_mid_save_is_removed_at_relaunch(
    master: Master, model_dir: Path
) -> None:
    base = master.home / "checkpoints"
    cfg = config("mid-save", TOTAL=12, HANG_IN_CHECKPOINT_AT=5)
    cfg["checkpoint_storage"] = keep_all_checkpoints(base)  # every registered one stays
    exp = master.create(cfg, model_dir)
    master.wait_for(lambda: "writing checkpoint" in logs(master, 1), what="a checkpoint save")
    assert list((base / PARTIALS).iterdir())  # the save being written
    supervisor = psutil.Process(master.describe(exp)["trials"][0]["pid"])
    trial_procs = [
        p for p in supervisor.children(recursive=True) if "trial.py" in " ".join(p.cmdline())
    ]
    assert trial_procs
    for p in trial_procs:
        p.kill()
    desc = master.wait_state(exp, TERMINAL, timeout=90)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    assert desc["trials"][0]["restarts"] == 1
    stored = [p.name for p in checkpoint_entries(base)]
    assert sorted(stored) == sorted(c["uuid"] for c in desc["checkpoints"]), (
        "a partial (or unregistered) checkpoint directory was left in storage"
    )


def test_a_run_failing_the_same_way_twice_is_not_restarted_again(
    master: Master, model_dir: Path
) -> None:
    # A missing entrypoint file is refused at create now; a script whose own input is missing
    # fails every run the same way before it reports anything.
    (model_dir / "needs_data.py").write_text(
        "import sys\nsys.exit('cannot open data.csv: No such file or directory')\n"
    )
    cfg = config("missing")
    cfg["entrypoint"] = "python3 needs_data.py"
    exp = master.create(cfg, model_dir)
    desc = master.wait_state(exp, TERMINAL, timeout=60)
    assert desc["experiment"]["state"] == "ERROR"
    [trial] = desc["trials"]
    assert trial["run_id"] == 2 and trial["restarts"] == 1
    assert trial["error"].startswith("exit code 1; last output: "), trial["error"]
    assert "data.csv" in trial["error"] and "No such file" in trial["error"]
    assert trial["error"].endswith("(twice in a row before reporting anything)")
