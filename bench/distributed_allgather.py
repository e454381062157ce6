"""Benchmark: DistributedContext.allgather of a small object across 2 local workers, beside
torch.distributed's all_gather_object (gloo) measured in the same processes, same run.

Goal (issue text): "median latency ... within 3x of torch.distributed's all_gather_object".

Two worker processes are started with torchrun's environment variables (RANK, WORLD_SIZE, ...);
each joins a gloo process group and builds ``DistributedContext.from_torch_distributed()``.
Object: ``{"rank": r, "step": i, "loss": 0.5}``. Each call is timed on rank 0 after a barrier-free
warm-up; the two methods alternate in rounds so machine noise hits both alike. Reports median and
p90 per call and the ratio. Exits 0 whether or not the goal is met; 1 if the benchmark broke.

Usage: ``python bench/distributed_allgather.py [--calls N]`` (needs torch; ~10 s on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from trialkit.rendezvous import free_port

GOAL_RATIO = 3.0


def worker(calls: int, rounds: int) -> None:
    import torch.distributed as dist

    from trialkit.core import DistributedContext

    dist.init_process_group("gloo")
    ctx = DistributedContext.from_torch_distributed()
    rank = ctx.rank
    times: dict[str, list[float]] = {"trialkit": [], "torch": []}

    def ours(i: int) -> list[object]:
        return ctx.allgather({"rank": rank, "step": i, "loss": 0.5})

    def theirs(i: int) -> list[object]:
        out: list[object] = [None] * dist.get_world_size()
        dist.all_gather_object(out, {"rank": rank, "step": i, "loss": 0.5})
        return out

    for fn in (ours, theirs):  # warm-up
        for i in range(50):
            fn(i)
    for rnd in range(rounds):
        order = [("trialkit", ours), ("torch", theirs)]
        if rnd % 2:
            order.reverse()
        for name, fn in order:
            for i in range(calls // rounds):
                t0 = time.perf_counter()
                got = fn(i)
                times[name].append(time.perf_counter() - t0)
                assert got[1 - rank]["step"] == i, got  # type: ignore[index]
    if rank == 0:
        print("RESULT " + json.dumps(times), flush=True)
    ctx.close()
    dist.destroy_process_group()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.calls, args.rounds)
        return 0
    try:
        import torch  # noqa: F401
    except ImportError:
        print("this benchmark needs torch (tox -e torch)", file=sys.stderr)
        return 1
    src = str(Path(__file__).resolve().parents[1] / "src")
    base = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "TRIALKIT_CHIEF_PORT": str(free_port()),
        "WORLD_SIZE": "2",
        "LOCAL_WORLD_SIZE": "2",
        "GLOO_SOCKET_IFNAME": "lo",
        "OMP_NUM_THREADS": "1",
    }
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--worker",
                "--calls",
                str(args.calls),
                "--rounds",
                str(args.rounds),
            ],
            env={**base, "RANK": str(r), "LOCAL_RANK": str(r)},
            stdout=subprocess.PIPE,
            text=True,
        )
        for r in range(2)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    if any(p.returncode for p in procs):
        print("a worker failed:\n" + "\n".join(outs), file=sys.stderr)
        return 1
    line = next(ln for ln in outs[0].splitlines() if ln.startswith("RESULT "))
    times = json.loads(line[len("RESULT ") :])
    med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
    p90 = {k: statistics.quantiles(v, n=10)[-1] * 1e6 for k, v in times.items()}
    ratio = med["trialkit"] / med["torch"]
    n = len(times["trialkit"])
    print(f"allgather of a small dict, 2 local workers, {n} calls each (rank 0's clock)")
    print(
        f"  trialkit DistributedContext.allgather : median {med['trialkit']:7.1f} us  p90 {p90['trialkit']:7.1f} us"
    )
    print(
        f"  torch.distributed.all_gather_object   : median {med['torch']:7.1f} us  p90 {p90['torch']:7.1f} us"
    )
    verdict = "meets" if ratio <= GOAL_RATIO else "MISSES"
    print(f"  ratio trialkit/torch: {ratio:.2f}x ({verdict} the goal of <= {GOAL_RATIO:.0f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
