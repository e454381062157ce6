"""Launch one worker per slot with ``horovodrun`` (Horovod over Gloo).

``python3 -m trialkit.launch.horovod [OPTIONS] [HOROVODRUN_ARGS... --] SCRIPT...``

Workers see Horovod's HOROVOD_RANK etc. plus USE_HOROVOD, DET_CHIEF_IP and TRIALKIT_CHIEF_PORT
and run under ``wrap_rank``. One slot on one node runs the script directly (``--autohorovod``).
Horovod 0.28.1 (its last release) does not build against torch 2.x as released (C++14);
``bash scripts/build_horovod.sh`` builds it from the sdist with C++17, Gloo and PyTorch (a few
minutes). When horovodrun is missing this launcher says so and exits 1; ``--dry-run`` prints the
command it would run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from ..contract import ClusterInfo
from ._common import (
    WATCH_ENV,
    LaunchError,
    WorkerWatch,
    cluster_info,
    job_env,
    node_addrs,
    parse_launcher_args,
    run_main,
    script_or_trial,
    slots_here,
    supervise,
)

PROG = "python3 -m trialkit.launch.horovod"
RANK_VARS = "HOROVOD_RANK,OMPI_COMM_WORLD_RANK,PMI_RANK"
MISSING = (
    "horovod is not installed (no 'horovodrun' command); build it into this environment with "
    "'bash scripts/build_horovod.sh' from a trialkit checkout (horovod 0.28.1 as released does "
    "not build against torch 2.x), or use python3 -m trialkit.launch.torch_distributed"
)


def find_horovodrun() -> str | None:
    """horovodrun from this interpreter's environment (a venv's python run by its path, not
    activated), else the one on PATH; None when there is neither."""
    here = Path(sys.executable).parent / "horovodrun"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("horovodrun")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [OPTIONS] [HOROVODRUN_ARGS... --] SCRIPT... | {PROG} --trial module:Class",
        description="Start one worker per slot with horovodrun; one failed worker ends them all.",
    )
    p.add_argument("--trial", metavar="MODULE:CLASS", help="run a Trial class with the harness")
    p.add_argument("--autohorovod", action="store_true", help="1 slot on 1 node: run directly")
    p.add_argument("--nproc-per-node", type=int, help="workers per host (default: slots)")
    p.add_argument("--network-interface", help="passed to horovodrun --network-interface")
    p.add_argument("--kill-grace", type=float, default=2.0, help="SIGTERM→SIGKILL seconds")
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    return p


def build_command(
    *,
    addrs: list[str],
    nproc_per_node: int,
    network_interface: str | None,
    hvd_args: list[str],
    worker: list[str],
) -> list[str]:
    hosts = ",".join(
        f"{'localhost' if i == 0 else a}:{nproc_per_node}" for i, a in enumerate(addrs)
    )
    cmd = [
        "horovodrun",
        "-np",
        str(nproc_per_node * len(addrs)),
        "-H",
        hosts,
        "--start-timeout",
        "1200",
        "--gloo-timeout-seconds",
        "240",
        "--gloo",
    ]
    if network_interface:
        cmd += ["--network-interface", network_interface]
    cmd += [
        "--cache-capacity",
        "1024",
        "--no-hierarchical-allreduce",
        "--no-hierarchical-allgather",
        *hvd_args,
        sys.executable,
        "-m",
        "trialkit.launch.wrap_rank",
        RANK_VARS,
        "--",
        *worker,
    ]
    return cmd


def refuse_torch_trial(worker: list[str]) -> None:
    """A PyTorchTrial (any Trial whose harness runs on torch_distributed) on several ranks:
    refused before horovodrun starts, as its harness would not average gradients."""
    from ..config import horovod_refusal, horovod_trial_spec
    from ..exec.harness import HarnessError, load_trial_class
    from .auto import launcher_for

    spec = horovod_trial_spec([sys.executable, "-m", "trialkit.launch.horovod", "--", *worker])
    if spec is None:
        return
    try:
        trial_class = load_trial_class(spec)
    except HarnessError as e:
        raise LaunchError(str(e)) from None
    if launcher_for(trial_class) == "trialkit.launch.torch_distributed":
        raise LaunchError(horovod_refusal(spec).removeprefix("entrypoint: "))


def main(argv: list[str]) -> int:
    parser = _parser()
    args, hvd_args, script = parse_launcher_args(parser, argv)
    worker = script_or_trial(args.trial, script)
    info: ClusterInfo | None = cluster_info()
    addrs = node_addrs(info)
    nproc = args.nproc_per_node or slots_here(info)
    if nproc * len(addrs) > 1:
        refuse_torch_trial(worker)
    if args.autohorovod and len(addrs) == 1 and nproc <= 1:
        watch = WorkerWatch()
        env = job_env(info, None)
        env[WATCH_ENV] = str(watch.path)
        cmd = [sys.executable, "-m", "trialkit.launch.wrap_rank", "0", "--", *worker]
        return supervise(cmd, env, watch, grace=args.kill_grace, expected=1)
    cmd = build_command(
        addrs=addrs,
        nproc_per_node=nproc,
        network_interface=args.network_interface,
        hvd_args=hvd_args,
        worker=worker,
    )
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    horovodrun = find_horovodrun()
    if horovodrun is None:
        raise LaunchError(MISSING)
    cmd[0] = horovodrun
    watch = WorkerWatch()
    env = job_env(info, None, USE_HOROVOD="1")
    env[WATCH_ENV] = str(watch.path)
    env.pop("SLURM_JOBID", None)
    return supervise(cmd, env, watch, grace=args.kill_grace, expected=nproc)


if __name__ == "__main__":
    run_main(main)
