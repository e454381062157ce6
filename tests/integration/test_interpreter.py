"""Each experiment runs with the interpreter it was created from (issue 13, item 2): a master
started from one venv (A: this test's) runs an experiment created from another (B: a minimal venv
made here, without torch), and says at create when an interpreter cannot run trials."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import time
from pathlib import Path

import pytest

import trialkit
from trialkit.client import start_background
from trialkit.store import Store

from .conftest import Master, write_script

pytestmark = pytest.mark.integration

#: Packages venv B leaves out, so that it is a different environment from A in what it can import.
_LEFT_OUT = ("torch", "functorch", "torchgen", "nvidia", "triton", "trialkit", "__editable__")

CORE_TRIAL = """
import sys
import marker_b  # only venv B has it
from trialkit import core

print(f"python {sys.executable}", flush=True)
with core.init() as ctx:
    ctx.train.report_validation_metrics(steps_completed=1, metrics={"loss": 0.5})
"""

# Runs for longer than the idle timeout of the idle test, calling no API until its end.
SLOW_TRIAL = """
import os, time
from trialkit import core

time.sleep(float(os.environ.get("SLEEP", "5")))
with core.init() as ctx:
    ctx.train.report_validation_metrics(steps_completed=1, metrics={"loss": 0.5})
"""

TORCH_TRIAL = """
import torch
from trialkit.pytorch import PyTorchTrial


class MNistTrial(PyTorchTrial):
    pass
"""


@pytest.fixture(scope="module")
def venv_b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (no pip, no torch) whose site-packages reaches trialkit's dependencies
    through a .pth line, plus a module of its own, ``marker_b``. Returns its python."""
    root = tmp_path_factory.mktemp("venv-b")
    venv = root / "b"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    deps = root / "deps"
    deps.mkdir()
    for entry in Path(site.getsitepackages()[0]).iterdir():
        if not entry.name.startswith(_LEFT_OUT) and entry.suffix != ".pth":
            (deps / entry.name).symlink_to(entry)
    # trialkit itself, from wherever this run imports it (an editable install, a PYTHONPATH).
    (deps / "trialkit").symlink_to(Path(trialkit.__file__).parent)
    [b_site] = venv.glob("lib/python*/site-packages")
    (b_site / "deps.pth").write_text(f"{deps}\n")
    (b_site / "marker_b.py").write_text("WHERE = 'venv b'\n")
    python = venv / "bin" / "python"
    probe = subprocess.run(
        [str(python), "-c", "import marker_b, httpx, trialkit.core; import torch"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "No module named 'torch'" in probe.stderr, probe.stderr
    return python


def _create_from(
    python: Path, master: Master, config: dict, model_dir: Path
) -> subprocess.CompletedProcess[str]:
    cfg = model_dir.parent / f"{model_dir.name}.json"
    cfg.write_text(json.dumps(config))
    return subprocess.run(
        [str(python), "-m", "trialkit.cli", "experiment", "create", str(cfg), str(model_dir)],
        env=master.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _config(entrypoint: str, **extra: object) -> dict:
    return {
        "name": "interpreter",
        "entrypoint": entrypoint,
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
        "max_restarts": 0,
        **extra,
    }


def _log(master: Master, trial_id: int) -> str:
    logs = master.client.request("GET", f"/api/v1/trials/{trial_id}/logs")["logs"]
    return "\n".join(ln["line"] for ln in logs)


def test_experiment_runs_with_the_interpreter_it_was_created_from(
    master: Master, venv_b: Path, tmp_path: Path
) -> None:
    assert master.client.request("GET", "/api/v1/master")["python"] == sys.executable
    model = tmp_path / "model"
    write_script(model, "trial.py", CORE_TRIAL)
    out = _create_from(venv_b, master, _config("python3 trial.py"), model)
    assert out.returncode == 0, out.stderr
    exp = int(out.stdout.strip().split()[-1])
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"})
    trial = desc["trials"][0]["id"]
    assert desc["experiment"]["state"] == "COMPLETED", _log(master, trial)
    assert f"python {venv_b}" in _log(master, trial)
    assert desc["experiment"]["python"] == str(venv_b)
    assert f"python {venv_b}" in master.cli("experiment", "describe", str(exp)).stdout


def test_environment_python_overrides_the_creators(
    master: Master, venv_b: Path, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    write_script(model, "trial.py", CORE_TRIAL)
    exp = master.create(_config("python3 trial.py", environment={"python": str(venv_b)}), model)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"})
    assert desc["experiment"]["state"] == "COMPLETED", _log(master, desc["trials"][0]["id"])
    assert desc["experiment"]["python"] == str(venv_b)


def test_a_missing_framework_is_one_line(master: Master, venv_b: Path, tmp_path: Path) -> None:
    model = tmp_path / "model"
    write_script(model, "model_def.py", TORCH_TRIAL)
    out = _create_from(venv_b, master, _config("model_def:MNistTrial"), model)
    assert out.returncode == 0, out.stderr
    exp = int(out.stdout.strip().split()[-1])
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"})
    assert desc["experiment"]["state"] == "ERROR"
    log = _log(master, desc["trials"][0]["id"])
    assert (
        f"error: entrypoint model_def:MNistTrial needs torch, which is not installed for {venv_b} "
        "(pip install 'trialkit[pytorch]')"
    ) in log
    assert "Traceback" not in log


def test_an_interpreter_the_master_cannot_run_fails_create(master: Master, tmp_path: Path) -> None:
    model = tmp_path / "model"
    write_script(model, "trial.py", "print('never runs')\n")
    cfg = tmp_path / "config.json"
    missing = tmp_path / "nowhere" / "bin" / "python"
    cfg.write_text(json.dumps(_config("python3 trial.py", environment={"python": str(missing)})))
    out = master.cli("experiment", "create", str(cfg), str(model), check=False)
    assert out.returncode != 0
    assert out.stderr.strip().splitlines() == [
        f"trialkit: error: environment.python: {missing} does not exist on the master's machine"
    ]
    # One that exists but has no trialkit: named, with how to fix it.
    no_trialkit = tmp_path / "python-without-trialkit"
    no_trialkit.write_text("#!/bin/sh\nexec /bin/false\n")
    no_trialkit.chmod(0o755)
    cfg.write_text(
        json.dumps(_config("python3 trial.py", environment={"python": str(no_trialkit)}))
    )
    out = master.cli("experiment", "create", str(cfg), str(model), check=False)
    assert out.returncode != 0
    [line] = out.stderr.strip().splitlines()
    assert f"environment.python: {no_trialkit} cannot import trialkit" in line
    assert master.client.request("GET", "/api/v1/experiments")["experiments"] == []


def test_an_idle_master_stops_itself_and_status_says_so(master: Master, tmp_path: Path) -> None:
    model = tmp_path / "model"
    write_script(model, "trial.py", SLOW_TRIAL)
    exp = master.create(_config("python3 trial.py"), model)
    master.wait_for(
        lambda: master.describe(exp)["trials"][:1] and master.describe(exp)["trials"][0]["pid"],
        what="the trial to start",
    )
    status = master.cli("master", "status").stdout
    for part in ("version", f"python   {sys.executable}", f"home     {master.home}", "uptime"):
        assert part in status, status
    assert "trials   1 running (1)" in status
    assert "idle     stops after 30m 00s idle" in status  # started on demand: the default
    master.wait_state(exp, {"COMPLETED"})
    master.cli("master", "down")
    pid_file = master.home / "master.json"
    master.client.close()
    # 5 s: time enough for the two CLI calls below to start on a loaded machine (with 2 s, the
    # master once stopped between them and `create` started a new one)
    master.client = start_background(master.home, slots=2, idle_timeout=5)
    assert "stops after 5s idle" in master.cli("master", "status").stdout
    # A running trial keeps it up though nothing calls the API for longer than the timeout.
    exp = master.create(
        _config(
            "python3 trial.py", name="second", environment={"environment_variables": ["SLEEP=10"]}
        ),
        model,
    )
    pid = json.loads(pid_file.read_text())["pid"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and json.loads(pid_file.read_text())["pid"] == pid:
        time.sleep(0.2)
    assert json.loads(pid_file.read_text())["pid"] is None, "the idle master is still up"
    assert "idle for 5 s" in (master.home / "master.log").read_text()
    store = Store.for_home(master.home)  # what the master left, read without starting one
    try:
        assert store.get_experiment(exp).state.value == "COMPLETED", "stopped mid-trial"
    finally:
        store.close()


def test_environment_python_must_be_an_absolute_path(tmp_path: Path) -> None:
    from trialkit.config import ConfigError, load_config

    with pytest.raises(ConfigError) as caught:
        load_config({"entrypoint": "python3 t.py", "environment": {"python": "python3"}})
    assert caught.value.errors[0] == (
        "environment.python: expected the absolute path of a Python interpreter, e.g. "
        "/opt/venv/bin/python, got 'python3'"
    )


@pytest.mark.parametrize(
    ("setting", "source"),
    [(["--idle-timeout", "soon"], "--idle-timeout"), ([], "TRIALKIT_MASTER_IDLE_TIMEOUT")],
)
def test_a_bad_idle_timeout_is_one_line(tmp_path: Path, setting: list[str], source: str) -> None:
    env = {**os.environ, "TRIALKIT_HOME": str(tmp_path / "home")}
    if not setting:
        env["TRIALKIT_MASTER_IDLE_TIMEOUT"] = "-5m"
    out = subprocess.run(
        [sys.executable, "-m", "trialkit.cli", "master", "up", *setting],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    [line] = out.stderr.splitlines()
    assert line.startswith(f"trialkit: error: {source}: expected seconds >= 0 or a duration")
    assert not (tmp_path / "home" / "master.json").exists()
