"""Launch one worker per slot with DeepSpeed's ``deepspeed`` runner.

``python3 -m trialkit.launch.deepspeed [OPTIONS] [DEEPSPEED_ARGS... --] SCRIPT...``

Workers see DeepSpeed's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_SIZE, CROSS_RANK, CROSS_SIZE,
MASTER_ADDR/PORT, plus USE_DEEPSPEED, DET_CHIEF_IP and TRIALKIT_CHIEF_PORT; each runs under
``wrap_rank``. Multi-node: a hostfile (``host slots=N`` lines) is written from the cluster info
(or pass ``--hostfile``) and DeepSpeed reaches the other hosts with pdsh/ssh. If any worker
fails, the others are stopped within ``--kill-grace`` seconds and the launcher exits non-zero.
Where torch sees no CUDA GPU the workers get ``DS_ACCELERATOR=cpu`` (unless one was chosen).
When the job ends, the launcher removes the shared-memory buffers DeepSpeed's CPU all-reduce
leaves in /dev/shm (it never unlinks them: ~69 MB per rank per run, until RAM is full).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..contract import ClusterInfo
from ..rendezvous import free_port
from ._common import (
    WATCH_ENV,
    LaunchError,
    WorkerWatch,
    chief_ip,
    cluster_info,
    job_env,
    node_addrs,
    parse_launcher_args,
    run_main,
    script_or_trial,
    slots_here,
    supervise,
)

PROG = "python3 -m trialkit.launch.deepspeed"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [OPTIONS] [DEEPSPEED_ARGS... --] SCRIPT... | {PROG} --trial module:Class",
        description="Start one worker per slot with the deepspeed runner; one failed worker "
        "ends them all.",
    )
    p.add_argument("--trial", metavar="MODULE:CLASS", help="run a Trial class with the harness")
    p.add_argument("--hostfile", help="DeepSpeed hostfile (default: written from cluster info)")
    p.add_argument("--master-addr", help="address of the first host (default: the chief's)")
    p.add_argument("--master-port", type=int, help="torch.distributed port (default: a free one)")
    p.add_argument("--nproc-per-node", type=int, help="workers per host (default: slots)")
    p.add_argument("--kill-grace", type=float, default=2.0, help="SIGTERM→SIGKILL seconds")
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    return p


def write_hostfile(addrs: list[str], slots: int, path: Path) -> Path:
    """``host slots=N`` per node; the first host is ``localhost`` when there is only one."""
    hosts = ["localhost"] if len(addrs) == 1 else addrs
    path.write_text("".join(f"{h} slots={slots}\n" for h in hosts))
    return path


def build_command(
    *,
    master_addr: str,
    master_port: int,
    nproc_per_node: int,
    hostfile: str | None,
    ds_args: list[str],
    worker: list[str],
) -> list[str]:
    cmd = ["deepspeed"]
    if hostfile:
        cmd += ["-H", hostfile]
    else:
        cmd += ["--num_nodes", "1", "--num_gpus", str(nproc_per_node)]
    cmd += [
        "--master_addr",
        master_addr,
        "--master_port",
        str(master_port),
        "--no_python",
        "--no_local_rank",
        "--no_ssh_check",
        *ds_args,
        sys.executable,
        "-m",
        "trialkit.launch.wrap_rank",
        "RANK",
        "--",
        *worker,
    ]
    return cmd


#: Where DeepSpeed's CPU comm op (csrc/cpu/comm/shm.cpp) puts its all-reduce workspaces, named
#: ``deepspeed_allreduce_buffer_{uid}_{MASTER_ADDR}_{MASTER_PORT}_{rank}``.
SHM_DIR = Path("/dev/shm")


def shm_buffers(master_port: int) -> Iterator[Path]:
    """This machine's DeepSpeed all-reduce buffers of the job on ``master_port``."""
    return SHM_DIR.glob(f"deepspeed_allreduce_buffer_{os.getuid()}_*_{master_port}_*")


def remove_shm_buffers(master_port: int) -> None:
    """Unlink the job's buffers once all its ranks have exited (DeepSpeed leaves them behind)."""
    for path in shm_buffers(master_port):
        path.unlink(missing_ok=True)


def torch_sees_cuda() -> bool:
    """Whether the workers' torch will find a CUDA GPU (the runner counts devices through the
    same accelerator, so the choice is made here, once, for all of them)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def main(argv: list[str]) -> int:
    parser = _parser()
    args, ds_args, script = parse_launcher_args(parser, argv)
    worker = script_or_trial(args.trial, script)
    info: ClusterInfo | None = cluster_info()
    addrs = node_addrs(info)
    nproc = args.nproc_per_node or slots_here(info)
    hostfile = args.hostfile
    if hostfile is None and len(addrs) > 1:
        name = f"hostfile-{info.allocation_id if info else os.getpid()}.txt"
        hostfile = str(write_hostfile(addrs, nproc, Path(tempfile.gettempdir()) / name))
    master_addr = args.master_addr or ("localhost" if len(addrs) == 1 else chief_ip(info))
    master_port = args.master_port or free_port()
    cmd = build_command(
        master_addr=master_addr,
        master_port=master_port,
        nproc_per_node=nproc,
        hostfile=hostfile,
        ds_args=ds_args,
        worker=worker,
    )
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    if shutil.which("deepspeed") is None or importlib.util.find_spec("deepspeed") is None:
        raise LaunchError(
            "deepspeed is not installed (no 'deepspeed' command): pip install deepspeed "
            "(DS_BUILD_OPS=0; on CPU-only machines also set DS_ACCELERATOR=cpu)"
        )
    watch = WorkerWatch()
    env = job_env(info, None, USE_DEEPSPEED="1")
    env[WATCH_ENV] = str(watch.path)
    if hostfile:
        env["DET_DEEPSPEED_HOSTFILE_PATH"] = hostfile
    if "DS_ACCELERATOR" not in env and not torch_sees_cuda():
        env["DS_ACCELERATOR"] = "cpu"
    try:
        return supervise(cmd, env, watch, grace=args.kill_grace, expected=nproc)
    finally:
        remove_shm_buffers(master_port)


if __name__ == "__main__":
    run_main(main)
