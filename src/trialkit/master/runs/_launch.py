"""What a trial process is started with: argv, environment and cluster-info file."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from ..._alias import with_boot_dir
from ..._home import make_private, make_private_tree, write_private
from ...config import ExperimentConfig, entrypoint_kind
from ...contract import INFO_ENV, ClusterInfo, TrialInfo
from ...rendezvous import CHIEF_PORT_ENV, TOKEN_ENV, free_port
from ...store import Experiment, Trial
from ..api._auth import trial_token
from ..search._experiment_config import config_of

STARTUP_HOOK = "startup-hook.sh"


@dataclass(frozen=True)
class LaunchSpec:
    argv: list[str]
    env: dict[str, str]
    info: ClusterInfo


def entrypoint_argv(entrypoint: str | list[str], workdir: Path) -> list[str]:
    """The command to run; a startup-hook.sh in the model directory is sourced first."""
    hook = (workdir / STARTUP_HOOK).is_file()
    if isinstance(entrypoint, list):
        if not hook:
            return list(entrypoint)
        return ["sh", "-c", f'. ./{STARTUP_HOOK} && exec "$@"', "sh", *entrypoint]
    return ["sh", "-c", f". ./{STARTUP_HOOK} && {entrypoint}" if hook else entrypoint]


def experiment_python(config: ExperimentConfig) -> str:
    """The interpreter an experiment's trials run with (the master's for older experiments)."""
    return config.environment.python or sys.executable


def _venv_of(python: str) -> Path | None:
    """The virtual environment ``python`` belongs to (``<venv>/bin/python``), if any."""
    root = Path(python).parent.parent
    return root if (root / "pyvenv.cfg").is_file() else None


def _python_shims(python: str, shim_dir: Path) -> None:
    """``python`` and ``python3`` commands that run ``python``, for the entrypoint's PATH.

    Scripts rather than symlinks: a symlinked venv interpreter would not find its pyvenv.cfg.
    """
    shim_dir.mkdir(parents=True, exist_ok=True)
    for name in ("python", "python3"):
        path = shim_dir / name
        tmp = path.with_suffix(".tmp")
        tmp.write_text(f'#!/bin/sh\nexec {shlex.quote(python)} "$@"\n')
        tmp.chmod(0o700)
        os.replace(tmp, path)


def _interpreter_env(python: str, shim_dir: Path, env: dict[str, str]) -> None:
    """Put ``python``'s shims, then its bin directory, first on PATH; VIRTUAL_ENV to its venv."""
    _python_shims(python, shim_dir)
    path = [str(shim_dir), str(Path(python).parent), env.get("PATH", "")]
    env["PATH"] = os.pathsep.join(p for p in path if p)
    venv = _venv_of(python)
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
    else:
        env.pop("VIRTUAL_ENV", None)


def _user_env(config: ExperimentConfig, gpus: bool) -> dict[str, str]:
    out = {}
    for item in config.environment.variables_for_slots(gpus=gpus):
        key, _, value = str(item).partition("=")
        out[key] = value
    return out


def build_launch(
    *,
    experiment: Experiment,
    trial: Trial,
    run_id: int,
    workdir: Path,
    info_file: Path,
    master_url: str,
    token: str,
    master_file: Path,
    home: Path,
    slot_ids: list[int],
    gpus: bool,
    latest_checkpoint: str | None,
    steps_completed: int,
) -> LaunchSpec:
    """Argv, env and ClusterInfo for one run of a trial.

    ``token`` is the master's trial key: the trial gets a token derived from it that reports
    for this trial only (never the admin token), in its 0600 info file and its environment.
    """
    config = experiment.config  # as the trial gets it (DET_EXPERIMENT_CONFIG)
    typed = config_of(experiment)
    allocation_id = f"{experiment.id}.{trial.id}.{run_id}"
    session_token = trial_token(token, trial.id, experiment.id)
    info = ClusterInfo(
        master_url=master_url,
        cluster_id="trialkit",
        agent_id="localhost",
        slot_ids=slot_ids,
        task_id=f"{experiment.id}.{trial.id}",
        allocation_id=allocation_id,
        session_token=session_token,
        latest_checkpoint=latest_checkpoint,
        trial=TrialInfo(
            trial_id=trial.id,
            experiment_id=experiment.id,
            trial_seed=trial.seed,
            hparams=trial.hparams,
            config=config,
            steps_completed=steps_completed,
            trial_run_id=run_id,
            debug=typed.debug,
        ),
        master_file=str(master_file),
        home=str(home),
    )
    # Unpacked model files keep their archive's modes: private like the rest of the home.
    make_private_tree(workdir)
    make_private(info_file.parent)
    write_private(info_file, json.dumps(info._to_json(), indent=2))
    python = experiment_python(typed)
    env = dict(os.environ)
    env.update(
        {
            INFO_ENV: str(info_file),
            "TRIALKIT_HOME": str(home),
            "TRIALKIT_MASTER_FILE": str(master_file),
            # The alias boot dir makes `import determined` work when Determined is absent.
            "PYTHONPATH": with_boot_dir(env.get("PYTHONPATH"), str(workdir)),
            "PYTHONUNBUFFERED": "1",
            "DET_MASTER": master_url,
            "DET_CLUSTER_ID": "trialkit",
            "DET_AGENT_ID": "localhost",
            "DET_SLOT_IDS": json.dumps(slot_ids),
            "DET_TASK_ID": info.task_id,
            "DET_ALLOCATION_ID": allocation_id,
            "DET_SESSION_TOKEN": session_token,
            "DET_TASK_TYPE": "TRIAL",
            "DET_TRIAL_ID": str(trial.id),
            "DET_EXPERIMENT_ID": str(experiment.id),
            "DET_TRIAL_SEED": str(trial.seed),
            "DET_HPARAMS": json.dumps(trial.hparams),
            "DET_EXPERIMENT_CONFIG": json.dumps(config),
            "DET_STEPS_COMPLETED": str(steps_completed),
            "DET_TRIAL_RUN_ID": str(run_id),
            "DET_CHIEF_IP": "127.0.0.1",
        }
    )
    _interpreter_env(python, info_file.parent / "bin", env)
    if latest_checkpoint:
        env["DET_LATEST_CHECKPOINT"] = latest_checkpoint
    else:
        env.pop("DET_LATEST_CHECKPOINT", None)
    if gpus:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, slot_ids))
    if len(slot_ids) > 1:
        # Multi-slot: a port for rank 0's DistributedContext, picked free per run, and a token
        # so a rank of another trial can never join this one (Determined uses fixed ports).
        env[CHIEF_PORT_ENV] = str(free_port())
        env[TOKEN_ENV] = secrets.token_hex(16)
    else:
        env.pop(CHIEF_PORT_ENV, None)
        env.pop(TOKEN_ENV, None)
    env.update(_user_env(typed, gpus))
    entrypoint = typed.entrypoint
    if entrypoint is None:
        raise ValueError("entrypoint: the experiment's config has none; set entrypoint")
    if isinstance(entrypoint, str) and entrypoint_kind(entrypoint) == "trial_class":
        # Legacy ``model_def:MyTrial``: the Trial harness imports the class from the model dir;
        # with several slots trialkit.launch.auto picks the launcher the Trial's harness needs
        # (torch_distributed, tensorflow, ...) and it starts one harness per slot.
        entrypoint = (
            [python, "-m", "trialkit.launch.auto", "--trial", entrypoint]
            if len(slot_ids) > 1
            else [python, "-m", "trialkit.exec.harness", entrypoint]
        )
    return LaunchSpec(entrypoint_argv(entrypoint, workdir), env, info)


def describe_argv(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)
