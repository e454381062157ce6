"""The torch_distributed launcher with NCCL on the GPUs (1 rank; 2 where there are 2 GPUs):
collectives on CUDA tensors through torch.distributed and DistributedContext, the harness's DDP
and its sampler sharding (each rank a disjoint half of every global batch), and the same weights
as one process with the same global batch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.pytorch import ddp_worker  # noqa: E402
from trialkit import pytorch  # noqa: E402

from .conftest import REPO, child_env  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.integration]


def _launch(ranks: int, out: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "trialkit.launch.torch_distributed", "--nproc-per-node",
           str(ranks), "--", sys.executable, "-m", "tests.gpu.nccl_worker", str(out)]  # fmt: skip
    return subprocess.run(
        cmd, cwd=REPO, env=child_env(OMP_NUM_THREADS="1"), capture_output=True, text=True,
        timeout=150,
    )  # fmt: skip


@pytest.mark.parametrize("ranks", [1, 2])
def test_nccl_ranks_under_the_launcher(cuda: int, ranks: int, tmp_path: Path) -> None:
    if ranks > cuda:
        pytest.skip(f"{ranks} ranks need {ranks} GPUs; this machine has {cuda}")
    out = tmp_path / "result.pt"
    p = _launch(ranks, out)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    r = torch.load(out, weights_only=False)
    assert r["backend"] == "nccl" and r["size"] == ranks and r["batches"] == 6
    assert r["allreduce"] == [float(sum(range(1, ranks + 1)))] * (3 if ranks > 1 else 2)
    if ranks > 1:
        assert r["allgather"] == list(range(ranks)) and r["allgather_devices"] == ["cuda"]
        assert r["broadcast"] == [0, 1, 2, 3]
    # Sampler sharding: per batch the ranks' records are disjoint and make the global batch.
    per_rank = r["rows"]
    assert len(per_rank) == ranks
    for batch in zip(*per_rank, strict=True):
        flat = [x for rows in batch for x in rows]
        assert len(flat) == ddp_worker.HPARAMS["global_batch_size"] == len(set(flat))
    # One process with the same global batch, on this GPU, reaches the same weights.
    with pytorch.init(hparams=dict(ddp_worker.HPARAMS), seed=0) as ctx:
        trial, _ = ddp_worker.fit(ctx)
    for a, b in zip(r["weights"], trial.model.parameters(), strict=True):
        torch.testing.assert_close(a, b.detach().cpu(), rtol=1e-4, atol=1e-5)
