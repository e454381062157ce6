"""Checkpoint GC and deletion on a real master with shared_fs storage, through the CLI:
``experiment gc``, ``checkpoint delete``, ``checkpoint list --best N``, ``checkpoint describe``,
``experiment delete``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from trialkit.client import start_background, stop_master
from trialkit.storage import MANIFEST_NAME

from .conftest import TRIALKIT, Master, checkpoint_entries, write_script

pytestmark = pytest.mark.integration

# Three steps per trial, a checkpoint and a validation at each; loss = |step - 2| + x / 10,
# so every trial's best checkpoint is at step 2 and x=1's is the experiment's best.
TRIAL = """
import os, pathlib
from trialkit import core

with core.init() as ctx:
    x = ctx.info.trial.hparams["x"]
    for step in (1, 2, 3):
        with ctx.checkpoint.store_path({"steps_completed": step}) as (path, uuid):
            (path / "weights.bin").write_bytes(b"w" * (1000 * x + step))
        ctx.train.report_validation_metrics(
            steps_completed=step, metrics={"loss": abs(step - 2) + x / 10})
        if step == 1 and str(x) == os.environ.get("STUCK_X"):  # see _make_stuck
            root, moved = pathlib.Path(os.environ["ROOT"]), pathlib.Path(os.environ["MOVED"])
            moved.mkdir(exist_ok=True)
            (root / uuid).rename(moved / uuid)
            (root / uuid).symlink_to(moved / uuid)
        first = first if step > 1 else uuid
    hold = os.environ.get("HOLD_FILE")
    while hold and not pathlib.Path(hold).exists():
        import time; time.sleep(0.1)
    if os.environ.get("DELETE_FIRST"):  # the trial deletes its own first checkpoint
        try:
            ctx.checkpoint.delete(first)
            print("deleted", first, flush=True)
        except Exception as e:
            print("delete refused:", e, flush=True)
"""


def _config(root: Path, **policy: int) -> dict[str, Any]:
    return {
        "name": "gc",
        "entrypoint": "python3 trial.py",
        "hyperparameters": {"x": {"type": "categorical", "vals": [1, 2, 3]}},
        "searcher": {"name": "grid", "metric": "loss", "max_length": {"batches": 3}},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(root), **policy},
        "max_restarts": 0,
    }


def _run(
    master: Master, tmp_path: Path, env: dict[str, Any] | None = None, **policy: int
) -> tuple[int, Path]:
    model, root = tmp_path / "model", tmp_path / "ckpts"
    write_script(model, "trial.py", TRIAL)
    config = _config(root, **policy)
    if env:
        config["environment"] = {"environment_variables": [f"{k}={v}" for k, v in env.items()]}
    exp = master.create(config, model)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=180)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    return exp, root


def _checkpoints(master: Master, exp: int) -> dict[tuple[int, int], dict[str, Any]]:
    """(x, steps) -> checkpoint record, every state included."""
    desc = master.describe(exp)
    x_of = {t["id"]: t["hparams"]["x"] for t in desc["trials"]}
    return {(x_of[c["trial_id"]], c["steps_completed"]): c for c in desc["checkpoints"]}


def _master_log(master: Master, text: str, timeout: float = 60) -> str:
    """The first line of the master's log that contains ``text`` (waited for)."""
    log = master.home / "master.log"
    found: list[str] = []

    def seen() -> bool:
        lines = log.read_text().splitlines() if log.exists() else []
        found.extend(ln for ln in lines if text in ln)
        return bool(found)

    master.wait_for(seen, timeout=timeout, what=f"{text!r} in the master log")
    return found[0]


# save_experiment_best 1 keeps x=1 step 2; save_trial_latest 1 keeps every step 3.
POLICY = {"save_experiment_best": 1, "save_trial_best": 0, "save_trial_latest": 1}
KEPT = {(1, 2), (1, 3), (2, 3), (3, 3)}


def test_a_failed_gc_at_the_end_is_logged_and_experiment_gc_finishes_it(
    master: Master, tmp_path: Path
) -> None:
    # x=3's step-1 checkpoint directory becomes a symlink (as if moved by hand): deleting it
    # leaves it in place, so the GC at the experiment's end stops there and says so.
    moved = tmp_path / "moved"
    env = {"STUCK_X": 3, "ROOT": tmp_path / "ckpts", "MOVED": moved}
    exp, root = _run(master, tmp_path, env, **POLICY)
    failed = _master_log(master, f"experiment {exp}: checkpoint GC at its end failed")
    before = _checkpoints(master, exp)
    assert len(before) == 9
    stuck = before[(3, 1)]["uuid"]
    assert f"checkpoint {stuck}: its files could not all be deleted" in failed, failed
    assert f"'trialkit experiment gc {exp}' retries" in failed
    assert before[(3, 1)]["state"] == "COMPLETED"  # its record stays: its files are there
    already = {k for k, c in before.items() if c["state"] == "DELETED"}
    (root / stuck).unlink()  # put the directory back; the retry deletes the rest
    (moved / stuck).rename(root / stuck)
    out = master.cli("experiment", "gc", str(exp)).stdout
    collected = {k for k, c in before.items() if f"deleted checkpoint {c['uuid']}" in out}
    assert (3, 1) in collected and not already & collected
    assert already | collected == set(before) - KEPT
    freed = sum(sum(before[k]["resources"].values()) for k in collected)
    assert f"experiment {exp}: {len(collected)} checkpoints deleted, {freed} bytes" in out
    after = _checkpoints(master, exp)
    assert {k for k, c in after.items() if c["state"] == "COMPLETED"} == KEPT
    assert sorted(p.name for p in checkpoint_entries(root)) == sorted(
        after[k]["uuid"] for k in KEPT
    )
    trials = {t["id"]: t for t in master.describe(exp)["trials"]}
    assert {t["latest_checkpoint"] for t in trials.values()} == {
        after[(x, 3)]["uuid"] for x in (1, 2, 3)
    }
    listed = master.cli("checkpoint", "list", str(exp)).stdout
    assert all(after[k]["uuid"] in listed for k in KEPT)
    assert not any(c["uuid"] in listed for k, c in after.items() if k not in KEPT)
    described = master.cli("experiment", "describe", str(exp)).stdout
    assert f"{len(KEPT)} checkpoints (trialkit checkpoint list {exp})" in described
    again = master.cli("experiment", "gc", str(exp)).stdout
    assert f"experiment {exp}: 0 checkpoints deleted, 0 bytes freed" in again


def test_gc_runs_when_the_experiment_ends(master: Master, tmp_path: Path) -> None:
    exp, root = _run(master, tmp_path, save_trial_best=1, save_trial_latest=1)
    # Default-style policy: each trial keeps its best (step 2) and its latest (step 3).
    kept = {(x, s) for x in (1, 2, 3) for s in (2, 3)}
    _master_log(master, f"experiment {exp}: checkpoint GC at its end deleted 3 checkpoints")
    after = _checkpoints(master, exp)
    assert {k for k, c in after.items() if c["state"] == "COMPLETED"} == kept
    assert sorted(p.name for p in checkpoint_entries(root)) == sorted(
        after[k]["uuid"] for k in kept
    )
    listed = master.cli("checkpoint", "list", str(exp)).stdout
    assert not any(after[(x, 1)]["uuid"] in listed for x in (1, 2, 3))


def test_checkpoint_list_best_and_describe(master: Master, tmp_path: Path) -> None:
    exp, _ = _run(master, tmp_path, save_trial_best=10, save_trial_latest=10)
    ckpts = _checkpoints(master, exp)
    out = master.cli("checkpoint", "list", str(exp), "--best", "3").stdout
    # loss: x=1 step 2: 0.1, x=2 step 2: 0.2, x=3 step 2: 0.3 (then 1.1 for x=1 steps 1 and 3).
    best = [ckpts[(x, 2)]["uuid"] for x in (1, 2, 3)]
    positions = [out.index(u) for u in best]
    assert positions == sorted(positions), out
    assert "best 3 by loss (smaller is better)" in out
    assert ckpts[(1, 1)]["uuid"] not in out
    c = ckpts[(2, 3)]
    desc = master.cli("checkpoint", "describe", c["uuid"]).stdout
    assert "weights.bin" in desc and "2003" in desc
    total = sum(n for p, n in c["resources"].items() if not p.endswith("/"))
    files = sum(1 for p in c["resources"] if not p.endswith("/"))
    assert f"{files} files, {total} bytes ({total / 1024:.1f} KiB) in total" in desc


def test_delete_refused_while_live_then_deleted(master: Master, tmp_path: Path) -> None:
    model, root, hold = tmp_path / "model", tmp_path / "ckpts", tmp_path / "hold"
    write_script(model, "trial.py", TRIAL)
    # The policy keeps every checkpoint, so the end-of-experiment GC leaves this one to delete.
    config = _config(root, save_trial_best=10, save_trial_latest=10) | {
        "hyperparameters": {"x": 1},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 3}},
    }
    config["environment"] = {"environment_variables": [f"HOLD_FILE={hold}"]}
    exp = master.create(config, model)
    master.wait_for(lambda: len(_checkpoints(master, exp)) == 3, timeout=120, what="3 checkpoints")
    uuid = _checkpoints(master, exp)[(1, 1)]["uuid"]
    refused = master.cli("checkpoint", "delete", uuid, check=False)
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines() == [
        f"trialkit: error: checkpoint {uuid} belongs to trial "
        f"{_checkpoints(master, exp)[(1, 1)]['trial_id']}, which is ACTIVE; it may resume from "
        "it, so delete it after the trial ends"
    ]
    refused = master.cli("experiment", "delete", "--yes", str(exp), check=False)
    assert refused.returncode != 0 and "only a finished experiment can be deleted" in refused.stderr
    hold.write_text("")
    master.wait_state(exp, {"COMPLETED"}, timeout=120)
    size = sum(_checkpoints(master, exp)[(1, 1)]["resources"].values())
    assert size > 1001  # weights.bin and the metadata file
    out = master.cli("checkpoint", "delete", uuid[:8]).stdout
    assert f"deleted checkpoint {uuid}" in out and f"1 checkpoint deleted, {size} bytes" in out
    assert not (root / uuid).exists()
    assert uuid not in master.cli("checkpoint", "list", str(exp)).stdout
    assert f"{uuid}: trial" in master.cli("checkpoint", "describe", uuid).stdout.replace(
        "checkpoint ", ""
    )


def test_experiment_delete_removes_storage_dirs_and_records(master: Master, tmp_path: Path) -> None:
    exp, root = _run(master, tmp_path, save_trial_best=10, save_trial_latest=10)
    trials = [t["id"] for t in master.describe(exp)["trials"]]
    assert all((master.home / "trials" / str(t)).is_dir() for t in trials)
    total = sum(sum(c["resources"].values()) for c in _checkpoints(master, exp).values())
    unconfirmed = subprocess.run(
        [*TRIALKIT, "experiment", "delete", str(exp)],
        env=master.env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert unconfirmed.returncode == 2 and unconfirmed.stderr.splitlines() == [
        f"trialkit: error: experiment delete {exp}: no terminal to confirm on; add --yes"
    ]
    assert len(checkpoint_entries(root)) == 9
    assert (root / "tensorboard" / f"experiment-{exp}").is_dir()  # AUTO's uploads
    out = master.cli("experiment", "delete", "--yes", str(exp)).stdout
    assert f"deleted experiment {exp}: 9 checkpoints, {total} bytes (" in out
    assert list(root.iterdir()) == []  # the TensorBoard files too, as Determined's delete
    assert not any((master.home / "trials" / str(t)).exists() for t in trials)
    gone = master.cli("experiment", "describe", str(exp), check=False)
    assert gone.returncode != 0 and f"experiment {exp} not found" in gone.stderr


def test_warm_start_source_is_kept(master: Master, tmp_path: Path) -> None:
    exp, root = _run(master, tmp_path, save_trial_best=10, save_trial_latest=10)
    source = _checkpoints(master, exp)[(1, 1)]["uuid"]
    model = tmp_path / "model"
    config = _config(root, save_trial_best=10, save_trial_latest=10) | {
        "hyperparameters": {"x": 1},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 3},
                     "source_checkpoint_uuid": source},
    }  # fmt: skip
    warm = master.create(config, model)
    master.wait_state(warm, {"COMPLETED", "ERROR"}, timeout=120)
    refused = master.cli("checkpoint", "delete", source, check=False)
    assert refused.returncode != 0
    assert f"is the warm-start source of experiment {warm}" in refused.stderr
    refused = master.cli("experiment", "delete", "--yes", str(exp), check=False)
    assert (
        refused.returncode != 0 and f"experiment {warm}; delete that experiment" in refused.stderr
    )
    assert (root / source).is_dir()


def test_a_trial_cannot_delete_a_warm_start_source(master: Master, tmp_path: Path) -> None:
    """ctx.checkpoint.delete goes through the master first, which refuses a warm-start
    source as ``checkpoint delete`` does; the files stay."""
    model, root, hold = tmp_path / "model", tmp_path / "ckpts", tmp_path / "hold"
    write_script(model, "trial.py", TRIAL)
    single = {"name": "single", "metric": "loss", "max_length": {"batches": 3}}
    config = _config(root, save_trial_best=10, save_trial_latest=10)
    config |= {"hyperparameters": {"x": 1}, "searcher": single}
    config["environment"] = {"environment_variables": [f"HOLD_FILE={hold}", "DELETE_FIRST=1"]}
    exp = master.create(config, model)
    master.wait_for(lambda: len(_checkpoints(master, exp)) == 3, timeout=120, what="3 checkpoints")
    source = _checkpoints(master, exp)[(1, 1)]
    warm_config = _config(root, save_trial_best=10, save_trial_latest=10)
    warm_config |= {"hyperparameters": {"x": 1}, "searcher": {
        **single, "source_checkpoint_uuid": source["uuid"]}}  # fmt: skip
    warm = master.create(warm_config, model)
    hold.write_text("")
    master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=120)
    master.wait_state(warm, {"COMPLETED", "ERROR"}, timeout=120)
    logs = master.cli("trial", "logs", str(source["trial_id"])).stdout
    assert "delete refused:" in logs, logs
    assert f"{source['uuid']} is the warm-start source of experiment {warm}" in logs, logs
    assert (root / source["uuid"] / "weights.bin").is_file()
    assert _checkpoints(master, exp)[(1, 1)]["state"] == "COMPLETED"


def test_experiment_delete_removes_the_warm_start_path_copy(master: Master, tmp_path: Path) -> None:
    src, model, root = tmp_path / "det-ckpt", tmp_path / "model", tmp_path / "ckpts"
    src.mkdir()
    (src / "weights.bin").write_bytes(b"w" * 10)
    write_script(model, "trial.py", TRIAL)
    config = _config(root, save_trial_best=10, save_trial_latest=10)
    config |= {"hyperparameters": {"x": 1}, "searcher": {
        "name": "single", "metric": "loss", "max_length": {"batches": 3}}}  # fmt: skip
    (model / "_config.json").write_text(json.dumps(config))
    out = master.cli(
        "experiment", "create", str(model / "_config.json"), str(model), "--warm-start", str(src)
    ).stdout
    exp = int(out.strip().split()[-1])
    master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=120)
    copy = master.describe(exp)["experiment"]["config"]["searcher"]["source_checkpoint_uuid"]
    assert (root / copy / "weights.bin").is_file() and len(checkpoint_entries(root)) == 4
    master.cli("experiment", "delete", "--yes", str(exp))
    assert checkpoint_entries(root) == []
    assert (src / "weights.bin").is_file()


MANY = """
from trialkit import core

with core.init() as ctx:
    for step in range(1, 41):
        with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _):
            for i in range(50):
                (path / f"part{i}").write_bytes(b"w" * 100)
    ctx.train.report_validation_metrics(steps_completed=40, metrics={"loss": 1.0})
"""


def test_a_master_stopped_while_gc_runs_stops_and_keeps_what_it_must(
    master: Master, tmp_path: Path
) -> None:
    """Stopped as the experiment ends (GC at work, or just done): the master stops by itself,
    no row is lost, every COMPLETED checkpoint has its files, and ``experiment gc`` after a
    restart finishes the job."""
    model, root = tmp_path / "model", tmp_path / "ckpts"
    write_script(model, "trial.py", MANY)
    config = _config(root, save_trial_best=1, save_trial_latest=1) | {
        "hyperparameters": {},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 40}},
    }
    exp = master.create(config, model)
    master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=300)
    started = time.monotonic()
    stop_master(master.home)
    assert time.monotonic() - started < 14  # stop_master would SIGKILL it at 15 s
    master.client = start_background(master.home, slots=2)
    rows = master.describe(exp)["checkpoints"]
    assert len(rows) == 40
    for c in rows:
        if c["state"] == "COMPLETED":
            files = [p for p in (root / c["uuid"]).iterdir() if p.name != MANIFEST_NAME]
            assert len(files) == len(c["resources"])
    master.cli("experiment", "gc", str(exp))
    [kept] = [c for c in master.describe(exp)["checkpoints"] if c["state"] == "COMPLETED"]
    assert kept["steps_completed"] == 40  # the latest, and the only one with a metric
    assert [p.name for p in checkpoint_entries(root)] == [kept["uuid"]]


# Deletes checkpoints as ``checkpoint delete`` does on the master (the same function) and is
# killed with SIGKILL when the first file is about to go: after the rows were marked, before any
# file was deleted, the point issue 19 names. (No fault hook exists in the master itself.)
KILLED_MIDWAY = """
import os, signal, sys
from trialkit.master.housekeeping._gc import delete_checkpoints_by_uuid
from trialkit.storage import SharedFSStorageManager
from trialkit.store import Store

SharedFSStorageManager.delete = lambda self, uuid: os.kill(os.getpid(), signal.SIGKILL)
delete_checkpoints_by_uuid(Store.for_home(sys.argv[1]), sys.argv[2:])
"""


def _kill_a_delete_midway(master: Master, uuids: list[str]) -> None:
    """Stop the master, then run a delete of ``uuids`` that is killed midway (KILLED_MIDWAY)."""
    stop_master(master.home)
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MIDWAY, str(master.home), *uuids],
        env=master.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr


def _make_stuck(root: Path, moved: Path, uuid: str) -> None:
    """The checkpoint's directory becomes a symlink (as if moved by hand): deleting it leaves
    it in place."""
    moved.mkdir(exist_ok=True)
    (root / uuid).rename(moved / uuid)
    (root / uuid).symlink_to(moved / uuid)


def test_a_delete_killed_midway_is_finished_when_the_master_starts(
    master: Master, tmp_path: Path
) -> None:
    """Issue 19: the files of checkpoints a killed delete had marked are deleted by the next
    master, in the background, and their rows end DELETED; one whose files cannot go stays
    DELETING (not listed, described as being deleted) until ``experiment gc`` finishes it."""
    exp, root = _run(master, tmp_path, save_trial_best=0, save_trial_latest=3)
    before = _checkpoints(master, exp)
    doomed = {k: c["uuid"] for k, c in before.items() if k[1] < 3}
    kept = {k: c["uuid"] for k, c in before.items() if k[1] == 3}
    _kill_a_delete_midway(master, list(doomed.values()))
    assert all((root / u).is_dir() for u in doomed.values())  # killed before any file went
    stuck, moved = doomed[(3, 1)], tmp_path / "moved"
    _make_stuck(root, moved, stuck)

    master.client = start_background(master.home, slots=2)
    done = _master_log(master, "checkpoints a stopped master left (")
    assert f"experiment {exp}: finished deleting 5 checkpoints" in done, done
    failed = _master_log(master, f"experiment {exp}: finishing the checkpoint deletes")
    assert f"checkpoint {stuck}: its files could not all be deleted" in failed, failed
    after = _checkpoints(master, exp)
    assert {k: c["state"] for k, c in after.items()} == {
        **{k: "DELETED" for k in doomed},
        (3, 1): "DELETING",
        **{k: "COMPLETED" for k in kept},
    }
    assert sorted(p.name for p in checkpoint_entries(root)) == sorted([*kept.values(), stuck])
    listed = json.loads(master.cli("checkpoint", "list", str(exp), "--json").stdout)
    assert sorted(c["uuid"] for c in listed) == sorted(kept.values())
    described = master.cli("checkpoint", "describe", stuck).stdout
    assert "DELETING" in described and "(being deleted from storage;" in described

    (root / stuck).unlink()  # put the directory back: experiment gc finishes it
    (moved / stuck).rename(root / stuck)
    out = master.cli("experiment", "gc", str(exp)).stdout
    assert f"deleted checkpoint {stuck}" in out
    assert master.describe(exp)["checkpoints"] and _checkpoints(master, exp)[(3, 1)]["state"] == (
        "DELETED"
    )
    assert sorted(p.name for p in checkpoint_entries(root)) == sorted(kept.values())
