"""Launch one worker per slot with torchrun.

``python3 -m trialkit.launch.torch_distributed [OPTIONS] [TORCHRUN_ARGS... --] SCRIPT...``

Workers see torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR/
PORT plus USE_TORCH_DISTRIBUTED, DET_CHIEF_IP and TRIALKIT_CHIEF_PORT, so both
``torch.distributed.init_process_group()`` and ``core.DistributedContext.from_torch_distributed()``
(or plain ``core.init()``) work. Each worker runs under ``wrap_rank`` (output prefixed with
``[rank=N] || ``); if any worker fails, the others get SIGTERM, then SIGKILL after ``--kill-grace``
seconds, and the launcher exits non-zero. Multi-node: run it once per node with the same
``--nnodes`` and ``--rdzv-endpoint`` and each node's ``--node-rank``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from ..rendezvous import TOKEN_ENV
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

PROG = "python3 -m trialkit.launch.torch_distributed"
#: The default of --rdzv-endpoint (set by the master for a trial spanning Ray nodes).
RDZV_ENV = "TRIALKIT_RDZV_ENDPOINT"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [OPTIONS] [TORCHRUN_ARGS... --] SCRIPT... | {PROG} --trial module:Class",
        description=(
            "Start one worker per slot with torchrun; one failed worker ends them all. Arguments "
            "before a '--' that are not options below go to torchrun."
        ),
    )
    p.add_argument("--trial", metavar="MODULE:CLASS", help="run a Trial class with the harness")
    p.add_argument(
        "--nproc-per-node",
        type=int,
        help="workers on this node (default: the trial's slots on this node, else 1)",
    )
    p.add_argument("--nnodes", type=int, help="number of nodes (default: from the cluster info)")
    p.add_argument(
        "--node-rank", type=int, help="this node's index (default: from the cluster info)"
    )
    p.add_argument(
        "--rdzv-endpoint",
        metavar="HOST:PORT",
        help="where node 0's torchrun listens (multi-node); DistributedContext's chief uses PORT+1 "
        "unless --chief-port is given",
    )
    p.add_argument("--chief-port", type=int, help="port of rank 0's DistributedContext")
    p.add_argument(
        "--kill-grace",
        type=float,
        default=2.0,
        help="seconds between SIGTERM and SIGKILL when a worker fails (default 2)",
    )
    return p


def build_command(
    *,
    nnodes: int,
    nproc_per_node: int,
    node_rank: int,
    master_addr: str,
    master_port: int | None,
    torchrun_args: list[str],
    worker: list[str],
) -> list[str]:
    """The torchrun command line: each worker runs ``wrap_rank RANK -- worker...``."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--max-restarts", "0"]
    if nnodes == 1 and master_port is None:
        cmd += ["--standalone", "--nnodes", "1"]
    else:
        cmd += [
            "--nnodes",
            str(nnodes),
            "--node-rank",
            str(node_rank),
            "--master-addr",
            master_addr,
            "--master-port",
            str(master_port),
        ]
    cmd += ["--nproc-per-node", str(nproc_per_node), *torchrun_args, "--no-python"]
    cmd += [sys.executable, "-m", "trialkit.launch.wrap_rank", "RANK", "--", *worker]
    return cmd


def _endpoint(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise LaunchError(f"--rdzv-endpoint {value!r}: expected HOST:PORT, e.g. 10.0.0.1:29400")
    return host, int(port)


def main(argv: list[str]) -> int:
    parser = _parser()
    args, torchrun_args, script = parse_launcher_args(parser, argv)
    worker = script_or_trial(args.trial, script)
    info = cluster_info()
    addrs = node_addrs(info)
    nnodes = args.nnodes or len(addrs)
    node_rank = (
        args.node_rank if args.node_rank is not None else (info.container_rank if info else 0)
    )
    nproc = args.nproc_per_node or slots_here(info)
    if nproc < 1 or nnodes < 1 or not 0 <= node_rank < nnodes:
        raise LaunchError(
            f"--nproc-per-node {nproc}, --nnodes {nnodes}, --node-rank {node_rank}: need at "
            "least one worker and 0 <= node rank < nodes"
        )
    master_addr, master_port = chief_ip(info), None
    chief_port = args.chief_port
    # A master starting one launcher per node (a Ray pool) gives the endpoint in the env.
    args.rdzv_endpoint = args.rdzv_endpoint or os.environ.get(RDZV_ENV) or None
    if args.rdzv_endpoint:
        master_addr, master_port = _endpoint(args.rdzv_endpoint)
        chief_port = chief_port or master_port + 1
    elif nnodes > 1:
        raise LaunchError(
            f"--nnodes {nnodes}: give --rdzv-endpoint HOST:PORT (node 0's address and a free "
            "port), the same on every node"
        )
    if nnodes > 1 and not os.environ.get(TOKEN_ENV):
        # The chief then listens on every interface: only peers that know a secret may join
        # (anything derived from the command line could be guessed by any host on the network).
        raise LaunchError(
            f"--nnodes {nnodes}: set {TOKEN_ENV} to the same secret on every node, e.g. "
            f"export {TOKEN_ENV}=$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
        )
    if importlib.util.find_spec("torch") is None:
        raise LaunchError(
            "torch is not installed, and this launcher runs torchrun: pip install torch "
            "(or use python3 -m trialkit.launch.wrap_rank for a single process)"
        )
    watch = WorkerWatch()
    env = job_env(info, chief_port, USE_TORCH_DISTRIBUTED="True")
    env[WATCH_ENV] = str(watch.path)
    if args.rdzv_endpoint:
        env["DET_CHIEF_IP"] = master_addr
    cmd = build_command(
        nnodes=nnodes,
        nproc_per_node=nproc,
        node_rank=node_rank,
        master_addr=master_addr,
        master_port=master_port,
        torchrun_args=torchrun_args,
        worker=worker,
    )
    return supervise(cmd, env, watch, grace=args.kill_grace, expected=nproc)


if __name__ == "__main__":
    run_main(main)
