"""Launch one TensorFlow worker per slot, each with its ``TF_CONFIG``.

``python3 -m trialkit.launch.tensorflow [OPTIONS] [--] SCRIPT...`` (Determined's name)

Every worker runs under ``wrap_rank`` and sees ``TF_CONFIG`` (all workers of the job, its own
index) plus DET_CHIEF_IP, TRIALKIT_CHIEF_PORT and the job token, so
``distributed, strategy = core.DistributedContext.from_tf_config()`` gives it its ranks and a
``MultiWorkerMirroredStrategy`` (plain ``core.init()`` finds the ranks too). If any worker fails,
the others get SIGTERM, then SIGKILL after ``--kill-grace`` seconds, and the launcher exits
non-zero. Multi-node: run it once per node with the same ``--hosts`` and ``--port`` (worker i of a
node listens on PORT+i) and each node's ``--node-rank``; by default both come from the cluster
info. Unlike Determined's launcher (one process per node) it starts one worker per slot.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..rendezvous import CHIEF_PORT_ENV, TOKEN_ENV, free_port
from ._common import (
    WATCH_ENV,
    LaunchError,
    WorkerWatch,
    cluster_info,
    job_env,
    node_addrs,
    run_main,
    script_or_trial,
    slots_here,
    split_overrides,
    supervise_all,
)

PROG = "python3 -m trialkit.launch.tensorflow"
DEFAULT_MULTI_NODE_PORT = 29400  # Determined's C10D_PORT, its tensorflow launcher's default


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [OPTIONS] [--] SCRIPT... | {PROG} --trial module:Class",
        description="Start one TensorFlow worker per slot with its TF_CONFIG; one failed worker "
        "ends them all.",
    )
    p.add_argument("--trial", metavar="MODULE:CLASS", help="run a Trial class with the harness")
    p.add_argument(
        "--nproc-per-node",
        type=int,
        help="workers on this node (default: the trial's slots on this node, else 1)",
    )
    p.add_argument(
        "--hosts",
        help="comma-separated node addresses, node 0 first (default: from the cluster info)",
    )
    p.add_argument("--node-rank", type=int, help="this node's index in --hosts")
    p.add_argument(
        "--port",
        type=int,
        help="first worker port on every node, worker i on PORT+i (default: free ports on one "
        f"node, {DEFAULT_MULTI_NODE_PORT} across nodes)",
    )
    p.add_argument(
        "--kill-grace",
        type=float,
        default=2.0,
        help="seconds between SIGTERM and SIGKILL when a worker fails (default 2)",
    )
    return p


def tf_config(workers: list[str], index: int) -> str:
    """The ``TF_CONFIG`` of worker ``index`` among ``workers`` (``host:port`` each)."""
    return json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})


def worker_addresses(hosts: list[str], nproc: int, port: int | None) -> list[str]:
    """``host:port`` of every worker, node by node; free ports when one node picks its own."""
    if port is None:
        return [f"{hosts[0]}:{free_port()}" for _ in range(nproc)]
    return [f"{h}:{port + i}" for h in hosts for i in range(nproc)]


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    overrides, script = split_overrides(argv)
    parser = _parser()
    if "--" in argv:
        return parser.parse_args(overrides), script
    parser.add_argument("script", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    return args, list(args.script)


def main(argv: list[str]) -> int:
    args, script = _parse(argv)
    worker = script_or_trial(args.trial, script)
    info = cluster_info()
    hosts = args.hosts.split(",") if args.hosts else node_addrs(info)
    node_rank = (
        args.node_rank if args.node_rank is not None else (info.container_rank if info else 0)
    )
    nproc = args.nproc_per_node or slots_here(info)
    if nproc < 1 or not 0 <= node_rank < len(hosts):
        raise LaunchError(
            f"--nproc-per-node {nproc}, --node-rank {node_rank} of {len(hosts)} hosts: need at "
            "least one worker and 0 <= node rank < hosts"
        )
    multi_node = len(hosts) > 1
    if multi_node and not os.environ.get(TOKEN_ENV):
        raise LaunchError(
            f"{len(hosts)} nodes: set {TOKEN_ENV} to the same secret on every node, e.g. "
            f"export {TOKEN_ENV}=$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
        )
    port = args.port or (DEFAULT_MULTI_NODE_PORT if multi_node else None)
    workers = worker_addresses(hosts if multi_node else ["127.0.0.1"], nproc, port)
    watch = WorkerWatch()
    # Across nodes every worker must agree on the chief's port without talking: the first port
    # after node 0's workers (what from_tf_config assumes too).
    chief_port = int(os.environ.get(CHIEF_PORT_ENV) or 0) or (
        port + nproc if multi_node and port is not None else None
    )
    env = job_env(info, chief_port)
    env[WATCH_ENV] = str(watch.path)
    if multi_node:
        env["DET_CHIEF_IP"] = hosts[0]
    commands = []
    for local in range(nproc):
        rank = node_rank * nproc + local
        cmd = [sys.executable, "-m", "trialkit.launch.wrap_rank", str(rank), "--", *worker]
        commands.append((cmd, {**env, "TF_CONFIG": tf_config(workers, rank)}))
    return supervise_all(commands, watch, grace=args.kill_grace, expected=nproc)


if __name__ == "__main__":
    run_main(main)
