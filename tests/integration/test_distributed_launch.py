"""The torch_distributed launcher without a master: a failed worker ends the job fast, and one
job spans two "nodes" (separate launcher process trees on loopback) with torch's allreduce,
DistributedContext's local groups and the chief's checkpoint all right."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trialkit.rendezvous import free_port

from .conftest import only_local_run_training

pytest.importorskip("torch")
pytestmark = pytest.mark.integration

SRC = str(Path(__file__).resolve().parents[2] / "src")
LAUNCH = [sys.executable, "-m", "trialkit.launch.torch_distributed"]

NODE_SCRIPT = """
import json, os, sys
import torch
import torch.distributed as dist
from trialkit import core


dist.init_process_group("gloo")
d = core.DistributedContext.from_torch_distributed()
t = torch.tensor([float(d.rank + 1)])
dist.all_reduce(t)
local = d.allgather_local(d.rank)
with core.init(distributed=d, checkpoint_storage=os.environ["STORE"]) as ctx:
    sid = None
    if d.rank == 0:
        with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, sid):
            torch.save({"sum": t.item(), "ranks": d.allgather(d.rank)}, path / "model.pt")
    else:
        d.allgather(d.rank)
    sid = d.broadcast(sid)
print("RESULT " + json.dumps({"rank": d.rank, "cross_rank": d.cross_rank, "sum": t.item(),
                              "local": local, "ckpt": sid}), flush=True)
dist.destroy_process_group()
"""

CRASH_SCRIPT = """
import os, sys, time
from trialkit import core
d = core.DistributedContext.from_torch_distributed()
d.allgather(0)
if d.rank == 1:
    time.sleep(0.5)
    os.kill(os.getpid(), 9)
# rank 0 trains on, never calling a collective again: only the launcher can stop it
signal_file = sys.argv[1]
open(signal_file, "w").write(str(time.time()))
time.sleep(120)
"""


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": SRC,
        "TRIALKIT_HOME": str(tmp_path / "home"),
        "GLOO_SOCKET_IFNAME": "lo",
        "OMP_NUM_THREADS": "1",
    }


def test_a_killed_worker_ends_the_whole_job_within_seconds(tmp_path: Path) -> None:
    script = tmp_path / "crash.py"
    script.write_text(CRASH_SCRIPT)
    t0 = time.monotonic()
    p = subprocess.run(
        [
            *LAUNCH,
            "--nproc-per-node",
            "2",
            "--kill-grace",
            "1",
            "--",
            sys.executable,
            str(script),
            str(tmp_path / "rank0-running"),
        ],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=90,
    )
    took = time.monotonic() - t0
    assert p.returncode == 137, p.stderr[-2000:]  # 128 + SIGKILL, the failed worker's status
    assert "worker rank 1 was killed by signal 9: stopping the other workers" in p.stderr
    assert (tmp_path / "rank0-running").exists()
    assert took < 30, f"{took:.1f}s"  # startup included; rank 0 alone would have slept 120 s


def test_two_nodes_on_loopback(tmp_path: Path) -> None:
    script = tmp_path / "node.py"
    script.write_text(NODE_SCRIPT)
    store = tmp_path / "ckpts"
    rdzv = free_port()
    env = {**_env(tmp_path), "STORE": str(store), "TRIALKIT_DIST_TOKEN": secrets.token_hex(16)}
    nodes = [
        subprocess.Popen(
            [
                *LAUNCH,
                "--nnodes",
                "2",
                "--node-rank",
                str(n),
                "--nproc-per-node",
                "2",
                "--rdzv-endpoint",
                f"127.0.0.1:{rdzv}",
                "--",
                sys.executable,
                str(script),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        for n in range(2)
    ]
    outs = []
    try:
        for p in nodes:
            outs.append(p.communicate(timeout=150)[0])
    finally:
        for p in nodes:
            if p.poll() is None:
                os.killpg(p.pid, 9)
    assert [p.returncode for p in nodes] == [0, 0], "\n".join(o[-3000:] for o in outs)
    results = [
        json.loads(line.split("RESULT ", 1)[1])
        for out in outs
        for line in out.splitlines()
        if "RESULT " in line
    ]
    assert sorted(r["rank"] for r in results) == [0, 1, 2, 3]
    by_rank = {r["rank"]: r for r in results}
    for rank, r in by_rank.items():
        assert r["sum"] == 10.0  # 1 + 2 + 3 + 4 over gloo across both nodes
        assert r["cross_rank"] == rank // 2
        assert r["local"] == [2 * (rank // 2), 2 * (rank // 2) + 1]
        assert r["ckpt"] == by_rank[0]["ckpt"]
    import torch

    ckpt = store / by_rank[0]["ckpt"]
    saved = torch.load(ckpt / "model.pt")
    assert saved == {"sum": 10.0, "ranks": [0, 1, 2, 3]}
    assert json.loads((ckpt / "metadata.json").read_text())["steps_completed"] == 1
    assert any(line.startswith("[rank=3] || RESULT") for line in outs[1].splitlines())


PLAIN_INIT_SCRIPT = """
from trialkit import core

with core.init() as ctx:  # no distributed=...: the launcher's environment says it all
    d = ctx.distributed
    print("GATHERED", d.rank, d.size, d.allgather(d.rank), flush=True)
    ctx.train.report_training_metrics(steps_completed=1, metrics={"rank": d.rank})
"""


def test_plain_core_init_under_the_launcher_without_a_master(tmp_path: Path) -> None:

    script = tmp_path / "plain.py"
    script.write_text(PLAIN_INIT_SCRIPT)
    p = subprocess.run(
        [*LAUNCH, "--nproc-per-node", "2", "--", sys.executable, str(script)],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "[rank=0] || GATHERED 0 2 [0, 1]" in p.stdout
    assert "[rank=1] || GATHERED 1 2 [0, 1]" in p.stdout
    ranks = sorted(m.values["rank"] for m in only_local_run_training(tmp_path / "home"))
    assert ranks == [0, 1]
