"""Custom searchers (0.37 SearchMethod API) end to end, with examples/custom_searcher: run inside
the master (in a process of its own: a crash or a hang there fails only its experiment), run by a
LocalSearchRunner in the user's process, and continued after a master SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trialkit.client import start_background

from .conftest import EXAMPLES, Master, _run_master, write_script

pytestmark = pytest.mark.integration
CUSTOM = EXAMPLES / "custom_searcher"


def _validation_steps(master: Master, trial_id: int) -> list[int]:
    rows = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": "validation"}
    )["metrics"]
    return [m["steps_completed"] for m in rows]


SEQUENTIAL = "searcher.custom_searcher_kwargs.max_concurrent=1"


def _check_halfway_search(master: Master, exp: int) -> dict[str, Any]:
    """HalfwayRandomSearch(max_trials=6, max_length=20, max_concurrent=1): every trial validates
    at 10; exactly the trials that were best so far at 10 (trials run one after another, so in
    trial-id order) go on to 20; then Shutdown."""
    desc = master.describe(exp)
    assert desc["experiment"]["state"] == "COMPLETED", desc["experiment"]
    trials = desc["trials"]
    assert len(trials) == 6 and all(t["state"] == "COMPLETED" for t in trials)
    halfway: list[tuple[int, float]] = []  # (trial, loss at 10)
    for t in trials:
        steps = _validation_steps(master, t["id"])
        assert steps in ([10], [10, 20]), f"trial {t['id']}: {steps}"
        rows = master.client.request(
            "GET", f"/api/v1/trials/{t['id']}/metrics", params={"group": "validation"}
        )["metrics"]
        halfway.append((t["id"], rows[0]["values"]["loss"]))
    best = None
    expected_full = set()
    for tid, loss in sorted(halfway):
        if best is None or loss < best:
            best = loss
            expected_full.add(tid)
    full = {t["id"] for t in trials if _validation_steps(master, t["id"]) == [10, 20]}
    assert full == expected_full
    assert desc["experiment"]["progress"] == 1.0
    return desc


def test_custom_searcher_inside_the_master(master: Master) -> None:
    out = master.cli(
        "experiment",
        "create",
        str(CUSTOM / "custom_in_master.yaml"),
        str(CUSTOM),
        "--follow",
        "--config",
        SEQUENTIAL,
    ).stdout
    assert "ended COMPLETED" in out
    desc = _check_halfway_search(master, 1)
    state = desc["searcher"]
    assert state["name"] == "custom" and state["progress"] == 1.0
    # Same seed in the kwargs: the same hyperparameters again.
    master.cli(
        "experiment",
        "create",
        str(CUSTOM / "custom_in_master.yaml"),
        str(CUSTOM),
        "--follow",
        "--config",
        SEQUENTIAL,
    )
    assert sorted(t["hparams"]["lr"] for t in master.describe(2)["trials"]) == sorted(
        t["hparams"]["lr"] for t in desc["trials"]
    )


def test_custom_searcher_in_the_users_process(master: Master, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(CUSTOM / "run_search.py"),
            "--searcher-dir",
            str(tmp_path / "state"),
            "--max-concurrent",
            "1",
        ],
        env=master.env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=CUSTOM,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "experiment 1 finished" in proc.stdout
    _check_halfway_search(master, 1)
    saved = json.loads((tmp_path / "state" / "state").read_text())
    assert saved["experiment_id"] == 1
    assert saved["searcher_state"]["experimentCompleted"] is True
    assert len(saved["searcher_state"]["trialsClosed"]) == 6
    assert (
        json.loads((tmp_path / "state" / "method" / "method_state.json").read_text())["created"]
        == 6
    )


def test_custom_searcher_errors_fail_the_experiment_with_the_method_named(
    master: Master, tmp_path: Path
) -> None:
    d = tmp_path / "m"
    shutil.copytree(CUSTOM, d)
    write_script(
        d,
        "broken.py",
        "from searcher import HalfwayRandomSearch\n"
        "class Broken(HalfwayRandomSearch):\n"
        "    def on_validation_completed(self, state, request_id, metric, train_length):\n"
        "        raise KeyError('no such rung')\n",
    )
    cfg = (
        (d / "custom_in_master.yaml")
        .read_text()
        .replace("searcher:HalfwayRandomSearch", "broken:Broken")
    )
    (d / "broken.yaml").write_text(cfg)
    master.cli("experiment", "create", str(d / "broken.yaml"), str(d))
    desc = master.wait_state(1, {"COMPLETED", "ERROR", "CANCELED"}, timeout=60)
    assert desc["experiment"]["state"] == "ERROR"
    assert (
        "custom searcher Broken.on_validation_completed raised KeyError: 'no such rung'"
        in desc["experiment"]["error"]
    )


def _failing_searcher(model_dir: Path, name: str, handler: str, body: str) -> Path:
    """A copy of the example whose searcher ``name`` runs ``body`` in ``handler``; its config."""
    write_script(
        model_dir,
        f"{name.lower()}.py",
        "import os\n"
        "from searcher import HalfwayRandomSearch\n"
        f"class {name}(HalfwayRandomSearch):\n"
        f"    def {handler}(self, *args):\n"
        f"        {body}\n",
    )
    cfg = (
        (CUSTOM / "custom_in_master.yaml")
        .read_text()
        .replace("searcher:HalfwayRandomSearch", f"{name.lower()}:{name}")
    )
    path = model_dir / f"{name.lower()}.yaml"
    path.write_text(cfg)
    return path


def test_custom_searcher_crash_or_exception_fails_its_experiment_not_the_master(
    master: Master, tmp_path: Path
) -> None:
    """User searcher code runs outside the master: os._exit(1) in it ends that experiment ERROR
    with one line naming the class; a raise does the same; the master serves a third search."""
    d = tmp_path / "m"
    shutil.copytree(CUSTOM, d)
    pid = master.pid()
    crash = _failing_searcher(d, "Crash", "on_trial_created", "os._exit(1)")
    raises = _failing_searcher(d, "Raises", "on_trial_created", "raise ValueError('bad rung')")
    master.cli("experiment", "create", str(crash), str(d))
    master.cli("experiment", "create", str(raises), str(d))
    master.cli("experiment", "create", str(CUSTOM / "custom_in_master.yaml"), str(CUSTOM))
    crashed = master.wait_state(1, {"COMPLETED", "ERROR", "CANCELED"}, timeout=60)["experiment"]
    raised = master.wait_state(2, {"COMPLETED", "ERROR", "CANCELED"}, timeout=60)["experiment"]
    assert crashed["state"] == "ERROR"
    assert (
        "custom searcher Crash.on_trial_created: its process exited with code 1" in crashed["error"]
    ), crashed["error"]
    assert "\n" not in crashed["error"]
    assert raised["state"] == "ERROR"
    assert (
        "custom searcher Raises.on_trial_created raised ValueError: bad rung" in raised["error"]
    ), raised["error"]
    healthy = master.wait_state(3, {"COMPLETED", "ERROR", "CANCELED"}, timeout=120)
    assert healthy["experiment"]["state"] == "COMPLETED", healthy["experiment"]
    assert len(healthy["trials"]) == 6
    assert master.pid() == pid
    os.kill(pid, 0)  # the same master process, still alive


CALL_TIMEOUT = 30


@pytest.fixture
def master_with_call_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Master]:
    """A master whose custom searchers get ``CALL_TIMEOUT`` seconds per call."""
    monkeypatch.delenv("TRIALKIT_DB", raising=False)
    monkeypatch.setenv("TRIALKIT_SEARCHER_CALL_TIMEOUT", str(CALL_TIMEOUT))
    yield from _run_master(tmp_path / "home", monkeypatch)


def test_a_hung_custom_searcher_delays_only_its_own_experiment(
    master_with_call_timeout: Master, tmp_path: Path
) -> None:
    """Its process sleeps in on_validation_completed: meanwhile a random search under the same
    master runs both its trials to the end and the experiment list answers at once; then the
    hung one fails with its one-line reason when its call timeout runs out."""
    master = master_with_call_timeout
    pid = master.pid()
    d = tmp_path / "m"
    shutil.copytree(CUSTOM, d)
    marker = tmp_path / "hung"
    body = f"open({str(marker)!r}, 'w').close(); import time; time.sleep(300)"
    hangs = _failing_searcher(d, "Hangs", "on_validation_completed", body)
    master.cli("experiment", "create", str(hangs), str(d), "--config", SEQUENTIAL)
    master.wait_for(marker.exists, timeout=90, what="the custom searcher to hang")
    hung_at = time.monotonic()

    searcher = {"name": "random", "metric": "loss", "max_trials": 2, "max_length": {"batches": 10}}
    hparams = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}
    other = master.create(
        {"name": "plain-random", "entrypoint": "python3 train.py", "hyperparameters": hparams,
         "searcher": searcher, "max_restarts": 0},
        d,  # the copy: create writes the config beside the model
    )  # fmt: skip
    slowest_list = 0.0
    while master.describe(other)["experiment"]["state"] not in {"COMPLETED", "ERROR", "CANCELED"}:
        assert time.monotonic() - hung_at < CALL_TIMEOUT - 2, (
            f"experiment {other} did not end while the custom searcher hung: "
            f"{master.describe(other)}"
        )
        started = time.monotonic()
        listed = master.client.request("GET", "/api/v1/experiments")["experiments"]
        slowest_list = max(slowest_list, time.monotonic() - started)
        assert {e["id"] for e in listed} == {1, other}
        time.sleep(0.5)
    ended = time.monotonic()
    # the master the CLI found stalled would have been replaced by a second one on this home
    assert master.pid() == pid, "a second master started: the first did not answer"
    desc = master.describe(other)
    assert desc["experiment"]["state"] == "COMPLETED", desc["experiment"]
    assert [t["state"] for t in desc["trials"]] == ["COMPLETED", "COMPLETED"]
    assert all(t["best_validation"] is not None for t in desc["trials"])  # they reported
    started = time.monotonic()
    listing = master.cli("experiment", "list").stdout
    cli_seconds = time.monotonic() - started
    assert master.describe(1)["experiment"]["state"] == "ACTIVE"  # still hung: its own wait
    assert time.monotonic() - hung_at < CALL_TIMEOUT
    assert "plain-random" in listing and "COMPLETED" in listing
    print(
        f"other experiment ended {ended - hung_at:.1f}s into the hang; slowest experiment list"
        f" {slowest_list:.2f}s; trialkit experiment list {cli_seconds:.2f}s"
    )
    assert slowest_list < 2.0, f"the experiment list took {slowest_list:.1f}s"
    assert cli_seconds < 10.0, f"trialkit experiment list took {cli_seconds:.1f}s"

    hung = master.wait_state(1, {"COMPLETED", "ERROR", "CANCELED"}, timeout=CALL_TIMEOUT + 60)
    error = hung["experiment"]["error"]
    assert hung["experiment"]["state"] == "ERROR"
    assert (
        f"custom searcher Hangs.on_validation_completed: no answer within {CALL_TIMEOUT}s"
        " (its process was killed)" in error
    ), error
    assert "\n" not in error


def test_custom_searcher_in_the_master_survives_a_master_sigkill(
    master: Master, tmp_path: Path
) -> None:
    master.cli(
        "experiment",
        "create",
        str(CUSTOM / "custom_in_master.yaml"),
        str(CUSTOM),
        "--config",
        SEQUENTIAL,
    )
    master.wait_for(
        lambda: sum(t["state"] == "COMPLETED" for t in master.describe(1)["trials"]) >= 2,
        timeout=60,
        what="two finished trials",
    )
    before = {t["request_id"]: t["hparams"] for t in master.describe(1)["trials"]}
    os.kill(master.pid(), signal.SIGKILL)
    time.sleep(0.5)
    master.client = start_background(master.home, slots=2)
    master.wait_state(1, {"COMPLETED", "ERROR", "CANCELED"}, timeout=90)
    desc = _check_halfway_search(master, 1)
    after = {t["request_id"]: t["hparams"] for t in desc["trials"]}
    assert {k: after[k] for k in before} == before


#: A 0.26-0.37 custom search method: two trials, each validated at 4 then 8 batches, then closed.
LEGACY_METHOD = """
import uuid
from determined import searcher

HP = {"global_batch_size": 16, "learning_rate": 0.05, "hidden": 8}


class TwoSteps(searcher.SearchMethod):
    def initial_operations(self, state):
        ops = []
        for _ in range(2):
            rid = uuid.uuid4()
            ops += [searcher.Create(request_id=rid, hparams=HP, checkpoint=None),
                    searcher.ValidateAfter(request_id=rid, length=4)]
        return ops

    def on_trial_created(self, state, request_id):
        return []

    def on_validation_completed(self, state, request_id, metric, train_length):
        if train_length < 8:
            return [searcher.ValidateAfter(request_id=request_id, length=8)]
        return [searcher.Close(request_id=request_id)]

    def on_trial_closed(self, state, request_id):
        return [searcher.Shutdown()] if len(state.trials_closed) >= 2 else []

    def on_trial_exited_early(self, state, request_id, exited_reason):
        return []

    def progress(self, state):
        return len(state.trials_closed) / 2
"""
LEGACY_RUNNER = """
import pathlib, sys
from determined import searcher
from legacy_method import TwoSteps

here = pathlib.Path(__file__).resolve().parent
runner = searcher.LocalSearchRunner(TwoSteps(), searcher_dir=here / "searcher_dir")
print("finished", runner.run(str(here / "legacy.yaml"), model_dir=here))
"""


def _legacy_project(tmp_path: Path, **searcher: Any) -> Path:
    """Determined 0.37's Trial-class project with ``searcher: {name: custom, unit: batches}``
    and no ``max_length``: the lengths come from the method's operations (issue 32, item 6)."""
    import yaml

    pytest.importorskip("torch")  # the Trial is a PyTorchTrial: tox's torch env runs these
    d = Path(shutil.copytree(Path(__file__).parent / "determined_037", tmp_path / "legacy"))
    cfg = yaml.safe_load((d / "const.yaml").read_text())
    cfg.pop("min_validation_period")
    cfg.pop("min_checkpoint_period")
    cfg["searcher"] = {"name": "custom", "metric": "validation_loss", "unit": "batches", **searcher}
    (d / "legacy.yaml").write_text(yaml.safe_dump(cfg))
    write_script(d, "legacy_method.py", LEGACY_METHOD)
    write_script(d, "run_legacy.py", LEGACY_RUNNER)
    return d


def _check_two_steps(master: Master, exp: int) -> None:
    desc = master.describe(exp)
    assert desc["experiment"]["state"] == "COMPLETED", desc["experiment"]
    assert len(desc["trials"]) == 2
    for t in desc["trials"]:
        assert t["state"] == "COMPLETED" and _validation_steps(master, t["id"]) == [4, 8]


def test_legacy_custom_searcher_config_runs_a_trial_class_in_the_master(
    master: Master, tmp_path: Path
) -> None:
    d = _legacy_project(tmp_path, custom_searcher_class="legacy_method:TwoSteps")
    out = master.cli("experiment", "create", str(d / "legacy.yaml"), str(d), "--follow").stdout
    assert "ended COMPLETED" in out, out
    _check_two_steps(master, 1)


def test_legacy_custom_searcher_config_runs_with_local_search_runner(
    master: Master, tmp_path: Path
) -> None:
    from trialkit._alias import BOOT_DIR

    d = _legacy_project(tmp_path)
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**master.env, "PYTHONPATH": f"{BOOT_DIR}{os.pathsep}{src}"}
    proc = subprocess.run(
        [sys.executable, str(d / "run_legacy.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=d,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "finished 1" in proc.stdout
    _check_two_steps(master, 1)
