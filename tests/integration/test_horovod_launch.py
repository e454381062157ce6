"""The horovod launcher for real: two CPU ranks under horovodrun (Gloo) allreduce a tensor with
Horovod, build DistributedContext.from_horovod(), allgather through it, and the run is tracked
once; a failing rank ends the job with its exit code. Runs in the ``horovod`` tox env (horovod
built by scripts/build_horovod.sh); skipped where horovod.torch does not import."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import only_local_run_training

pytest.importorskip("horovod.torch")
pytestmark = pytest.mark.integration

SRC = str(Path(__file__).resolve().parents[2] / "src")

SCRIPT = """
import horovod.torch as hvd
import torch
from trialkit import core


hvd.init()
total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum)
weights = hvd.broadcast(torch.full((3,), float(hvd.rank() + 5)), root_rank=0)
from_env = core.DistributedContext.from_launcher_env()
with core.init(distributed=core.DistributedContext.from_horovod(hvd)) as ctx:
    d = ctx.distributed
    got = d.allgather([hvd.rank(), hvd.local_rank()])
    same = (from_env.rank, from_env.size, from_env.local_size) == (d.rank, d.size, d.local_size)
    print("RESULT", d.rank, d.size, d.local_size, total.item(), weights.tolist(), got, same,
          flush=True)
    if d.rank == 0:
        ctx.train.report_training_metrics(steps_completed=1, metrics={"sum": total.item()})
"""

FAILING = """
import os
import time
import horovod.torch as hvd

hvd.init()
if hvd.rank() == 1:
    os._exit(3)  # a crash: no atexit, no horovod shutdown
time.sleep(90)  # rank 0 would hang here; the launcher must stop it
print("rank 0 was not stopped", flush=True)
"""


def _launch(tmp_path: Path, script: str, timeout: float) -> subprocess.CompletedProcess[str]:
    (tmp_path / "train.py").write_text(script)
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "TRIALKIT_HOME": str(tmp_path / "home"),
        "OMP_NUM_THREADS": "1",
    }
    env.pop("TRIALKIT_CLUSTER_INFO", None)
    return subprocess.run(
        [sys.executable, "-m", "trialkit.launch.horovod", "--nproc-per-node", "2"]
        + ["--network-interface", "lo", "--", sys.executable, "train.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_two_cpu_ranks_under_horovodrun(tmp_path: Path) -> None:

    p = _launch(tmp_path, SCRIPT, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    for rank in (0, 1):
        line = f"RESULT {rank} 2 2 3.0 [5.0, 5.0, 5.0] [[0, 0], [1, 1]] True"
        assert f"[rank={rank}] || {line}" in out, out[-3000:]
    assert len(only_local_run_training(tmp_path / "home")) == 1


def test_a_failing_rank_ends_the_job_with_its_code(tmp_path: Path) -> None:
    start = time.monotonic()
    p = _launch(tmp_path, FAILING, timeout=150)
    out = p.stdout + p.stderr
    assert p.returncode == 3, out[-3000:]
    assert "worker rank 1 exited with code 3" in out, out[-3000:]
    assert "rank 0 was not stopped" not in out, out[-3000:]
    assert time.monotonic() - start < 80, out[-3000:]
