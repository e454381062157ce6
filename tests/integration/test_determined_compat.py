"""Determined code runs unmodified under the master through the ``determined`` alias: a
Determined 0.37-style PyTorchTrial project (``determined_037/``) created with
``trialkit experiment create const.yaml .`` and ``det e create const.yaml .``, its search,
its checkpoints, and seed 002's Generic API script (``generic_002/``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trialkit._alias import BOOT_DIR

from .conftest import Master, keep_all_checkpoints

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.integration
HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
SEED = "reproducibility.experiment_seed=11"


def _project(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(HERE / name, tmp_path / name))


def _cli(
    master: Master, prog: str, *args: str, cwd: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``trialkit ...`` or ``det ...`` as a user types it in the project directory."""
    module = "trialkit.cli" if prog == "trialkit" else "trialkit.cli._det"
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=master.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert proc.returncode == 0, f"{prog} {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _created(proc: subprocess.CompletedProcess[str]) -> int:
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("Created experiment")]
    return int(line.split()[-1])


def _validations(master: Master, trial_id: int) -> list[tuple[int, float]]:
    resp = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": "validation"}
    )
    return [(m["steps_completed"], m["values"]["validation_loss"]) for m in resp["metrics"]]


def _expected_checkpoint_steps(validations: list[tuple[int, float]]) -> list[int]:
    """determined_037/const.yaml's checkpoints: every 16 batches (min_checkpoint_period), at the
    end (32), and after each validation that beats every earlier one (checkpoint_policy: best).
    The run is unseeded, so which validations are new bests differs from run to run."""
    steps = {16, 32}
    best = None
    for step, loss in validations:
        if best is None or loss < best:
            steps.add(step)
            best = loss
    return sorted(steps)


def _logs(master: Master, trial_id: int) -> str:
    return _cli(master, "trialkit", "trial", "logs", str(trial_id), cwd=master.home).stdout


def test_determined_037_project_runs_unmodified_with_trialkit_and_det(
    master: Master, tmp_path: Path
) -> None:
    project = _project(tmp_path, "determined_037")
    runs: dict[str, dict[str, Any]] = {}
    for prog, group in (("trialkit", "experiment"), ("det", "e")):
        proc = _cli(master, prog, group, "create", "const.yaml", ".", "--config", SEED, cwd=project)
        runs[prog] = master.wait_state(_created(proc), {"COMPLETED", "ERROR"}, timeout=240)
    for prog, desc in runs.items():
        assert desc["experiment"]["state"] == "COMPLETED", (prog, desc)
    [tk_trial], [det_trial] = runs["trialkit"]["trials"], runs["det"]["trials"]
    tk_vals = _validations(master, tk_trial["id"])
    # max_length 2 epochs of records_per_epoch 256 at global_batch_size 16 = 32 batches,
    # validated every 8 (min_validation_period).
    assert [s for s, _ in tk_vals] == [8, 16, 24, 32]
    assert tk_vals[-1][1] < tk_vals[0][1]  # it learns
    # The same trial seed: `det e create` trains exactly as `trialkit experiment create`.
    assert _validations(master, det_trial["id"]) == tk_vals
    assert f"trial {tk_trial['id']} of experiment" in _logs(master, tk_trial["id"])

    # Its checkpoints are in Determined's PyTorchTrial layout, and load back locally through
    # the opt-in alias (the Trial class imports `determined`).
    ckpts = _cli(
        master, "det", "e", "lc", str(runs["det"]["experiment"]["id"]), "--json", cwd=project
    )
    last = max(json.loads(ckpts.stdout), key=lambda c: c["steps_completed"])
    assert {"state_dict.pth", "load_data.json", "metadata.json"} <= set(last["resources"])
    out = tmp_path / "ckpt"
    _cli(master, "det", "checkpoint", "download", last["uuid"], "-o", str(out), cwd=project)
    assert json.loads((out / "load_data.json").read_text())["trial_type"] == "PyTorchTrial"
    load = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, determined as det; "
            "trial = det.pytorch.load_trial_from_checkpoint_path(sys.argv[1]); "
            "print(type(trial).__name__, type(trial).__module__)",
            str(out),
        ],
        env={**master.env, "PYTHONPATH": f"{BOOT_DIR}{os.pathsep}{SRC}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert load.returncode == 0, load.stderr
    assert load.stdout.strip() == "RegressionTrial model_def"


def test_determined_037_search_with_det(master: Master, tmp_path: Path) -> None:
    project = _project(tmp_path, "determined_037")
    preview = _cli(master, "det", "preview-search", "random.yaml", cwd=project)
    assert "3 trials (seed 3)" in preview.stdout
    proc = _cli(master, "det", "e", "create", "random.yaml", ".", cwd=project)
    desc = master.wait_state(_created(proc), {"COMPLETED", "ERROR"}, timeout=240)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    assert [t["state"] for t in desc["trials"]] == ["COMPLETED"] * 3
    assert all(_validations(master, t["id"])[-1][0] == 16 for t in desc["trials"])
    described = _cli(master, "det", "e", "describe", str(desc["experiment"]["id"]), cwd=project)
    assert "random 100% · 3 completed" in described.stdout


def test_the_alias_setting_turns_it_off_under_the_master(master: Master, tmp_path: Path) -> None:
    project = _project(tmp_path, "determined_037")
    proc = _cli(
        master,
        "trialkit",
        "experiment",
        "create",
        "const.yaml",
        ".",
        "--config",
        'environment.environment_variables=["TRIALKIT_DETERMINED_ALIAS=0"]',
        cwd=project,
    )
    exp = _created(proc)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=240)
    assert desc["experiment"]["state"] == "ERROR"
    [trial] = desc["trials"]
    assert "needs determined, which is not installed" in _logs(master, trial["id"])


def test_generic_api_seed_002_script_under_the_master(master: Master, tmp_path: Path) -> None:
    project = _project(tmp_path, "generic_002")
    proc = _cli(master, "trialkit", "experiment", "create", "my_config.yaml", ".", cwd=project)
    assert "entrypoint_script: legacy draft key" in proc.stderr
    desc = master.wait_state(_created(proc), {"COMPLETED", "ERROR"}, timeout=240)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    assert len(desc["trials"]) == 2
    for trial in desc["trials"]:
        bs = trial["hparams"]["batch_size"]
        batches_per_epoch = -(-256 // bs)
        resp = master.client.request(
            "GET", f"/api/v1/trials/{trial['id']}/metrics", params={"group": "validation"}
        )
        steps = [m["steps_completed"] for m in resp["metrics"]]
        assert steps == [batches_per_epoch * e for e in (1, 2, 3)]  # max_length: 3 epochs
        got = master.client.request("GET", f"/api/v1/trials/{trial['id']}")
        assert [c["steps_completed"] for c in got["checkpoints"]] == steps  # save_path() each
    assert desc["experiment"]["progress"] == 1.0


def test_generic_api_launch_layer_through_the_alias(master: Master, tmp_path: Path) -> None:
    project = _project(tmp_path, "generic_002")
    proc = _cli(master, "det", "e", "create", "launch_layer.yaml", ".", cwd=project)
    desc = master.wait_state(_created(proc), {"COMPLETED", "ERROR"}, timeout=240)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    assert "python3 -m determined.launch.torch_distributed python3 train.py" in _logs(
        master, trial["id"]
    )


_SDK_SCRIPT = """
import sys
import determined as det
from determined.experimental import client

client.login()  # Determined scripts log in first; trialkit's local master needs nothing
exp = client.create_experiment("const.yaml", ".")
print("state", exp.wait(interval=0.2).value)
best = exp.top_checkpoint()
print("steps", best.steps_completed)
print("trial", best.trial_id)
path = best.download(sys.argv[1])
trial = det.pytorch.load_trial_from_checkpoint_path(path)
print("loaded", type(trial).__name__)
print("trial checkpoints", [c.steps_completed for c in client.get_trial(best.trial_id).list_checkpoints()])
"""


def test_determined_sdk_client_creates_waits_and_downloads(master: Master, tmp_path: Path) -> None:
    """An inference-style script with `from determined.experimental import client`, run with
    the opt-in alias (here via the boot dir, as `trialkit alias install` would)."""
    project = _project(tmp_path, "determined_037")
    with (project / "const.yaml").open("a") as f:  # it lists every checkpoint after the end
        storage = keep_all_checkpoints(tmp_path / "ckpts")
        f.write("checkpoint_storage:\n" + "".join(f"  {k}: {v}\n" for k, v in storage.items()))
    proc = subprocess.run(
        [sys.executable, "-c", _SDK_SCRIPT, str(tmp_path / "best")],
        cwd=project,
        env={**master.env, "PYTHONPATH": f"{BOOT_DIR}{os.pathsep}{SRC}"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    trial_id = int(lines[2].split()[1])
    validations = _validations(master, trial_id)
    # top_checkpoint is the checkpoint at the lowest validation_loss (unseeded: any of them).
    best_steps = min(validations, key=lambda sv: sv[1])[0]
    assert lines == [
        "state COMPLETED",
        f"steps {best_steps}",
        f"trial {trial_id}",
        "loaded RegressionTrial",
        f"trial checkpoints {_expected_checkpoint_steps(validations)}",
    ]
    assert (tmp_path / "best" / "state_dict.pth").is_file()


def test_test_one_batch_runs_a_trial_class_locally(tmp_path: Path, trialkit_home: Path) -> None:
    project = _project(tmp_path, "determined_037")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import yaml, determined as det, model_def\n"
            "cfg = yaml.safe_load(open('const.yaml'))\n"
            "trial = det.experimental.test_one_batch(model_def.RegressionTrial, cfg)\n"
            "print(type(trial).__name__)",
        ],
        cwd=project,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(BOOT_DIR), str(SRC), str(project)])},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "RegressionTrial"
    # One batch trained, validated and checkpointed, recorded as a local run.
    from tests.local_runs import ingested_store

    store = ingested_store(trialkit_home)
    try:
        [exp] = store.list_experiments()
        [trial] = store.list_trials(exp.id)
        assert [m.steps_completed for m in store.list_metrics(trial.id, "validation")] == [1]
        assert [c.steps_completed for c in store.list_checkpoints(trial_id=trial.id)] == [1]
    finally:
        store.close()


def test_generic_api_adaptive_search_resumes_promoted_trials(
    master: Master, tmp_path: Path
) -> None:
    """The draft script calls basic_search() once; a trial the searcher promotes is relaunched
    and resumes from `context.latest_checkpoint` to the longer length."""
    project = _project(tmp_path, "generic_002")
    preview = _cli(master, "det", "preview-search", "adaptive.yaml", cwd=project).stdout
    assert preview.count("2 → 4") == 1
    proc = _cli(master, "det", "e", "create", "adaptive.yaml", ".", cwd=project)
    desc = master.wait_state(_created(proc), {"COMPLETED", "ERROR"}, timeout=300)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    resumed = [t for t in desc["trials"] if "resumed after epoch 1" in _logs(master, t["id"])]
    assert len(resumed) == 1
    [promoted] = resumed
    steps = master.client.request(
        "GET", f"/api/v1/trials/{promoted['id']}/metrics", params={"group": "validation"}
    )["metrics"]
    # 256 records / batch_size 32 = 8 batches an epoch: 2 epochs, then 2 more after resuming.
    assert [m["steps_completed"] for m in steps] == [8, 16, 24, 32]
    assert "run 2:" in _logs(master, promoted["id"])
