"""The deepspeed launcher for real: two CPU ranks (gloo) under DeepSpeed's own runner train a
ZeRO-1 model, build DistributedContext.from_deepspeed(), agree on the weights, and the run is
tracked once. Runs in the ``deepspeed`` tox env (skipped where deepspeed is not installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trialkit.launch.deepspeed import shm_buffers
from trialkit.rendezvous import free_port

from .conftest import only_local_run_training

pytest.importorskip("deepspeed")
pytestmark = pytest.mark.integration

SRC = str(Path(__file__).resolve().parents[2] / "src")

SCRIPT = """
import torch
import deepspeed
from trialkit import core


deepspeed.init_distributed()
model = torch.nn.Linear(4, 1)
engine, _, _, _ = deepspeed.initialize(
    model=model,
    model_parameters=model.parameters(),
    config={
        "train_batch_size": 8,
        "optimizer": {"type": "Adam", "params": {"lr": 0.1, "torch_adam": True}},
        "zero_optimization": {"stage": 1},
    },
)
torch.manual_seed(engine.global_rank)  # different data per rank: ZeRO must still agree
with core.init(distributed=core.DistributedContext.from_deepspeed()) as ctx:
    d = ctx.distributed
    for step in range(3):
        loss = engine(torch.randn(4, 4)).pow(2).mean()
        engine.backward(loss)
        engine.step()
    weights = d.allgather(engine.module.weight.detach().tolist())
    print("RANK", d.rank, d.size, d.local_size, weights[0] == weights[1], flush=True)
    if d.rank == 0:
        ctx.train.report_training_metrics(steps_completed=3, metrics={"loss": float(loss)})
"""


def test_two_cpu_ranks_under_the_deepspeed_runner(tmp_path: Path) -> None:

    (tmp_path / "train.py").write_text(SCRIPT)
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "TRIALKIT_HOME": str(tmp_path / "home"),
        "DS_ACCELERATOR": "cpu",
        "OMP_NUM_THREADS": "1",
    }
    port = free_port()
    p = subprocess.run(
        [sys.executable, "-m", "trialkit.launch.deepspeed", "--nproc-per-node", "2"]
        + ["--master-port", str(port), "--", sys.executable, "train.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert "[rank=0] || RANK 0 2 2 True" in out and "[rank=1] || RANK 1 2 2 True" in out, out[
        -3000:
    ]
    assert len(only_local_run_training(tmp_path / "home")) == 1
    # DeepSpeed's CPU all-reduce leaves a ~69 MB /dev/shm buffer per rank; the launcher removes them
    assert "deepspeed_shm_comm" in out, "the run did not use the shared-memory all-reduce"
    assert list(shm_buffers(port)) == []
