"""Two DDP workers on gloo (started here with torchrun-style env) train to the same weights as
one worker with the same global batch size."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

torch = pytest.importorskip("torch")

from trialkit import pytorch  # noqa: E402
from trialkit.rendezvous import free_port  # noqa: E402

from .ddp_worker import HPARAMS, fit  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def test_two_workers_match_one_worker_with_the_same_global_batch(
    tmp_path: Path, trialkit_home: Path
) -> None:
    out = tmp_path / "ddp.pt"
    port = free_port()
    procs = []
    for rank in range(2):
        env = {
            **os.environ,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": "2",
            "LOCAL_WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join(
                [str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")]
            ),
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "tests.pytorch.ddp_worker", str(out)],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    logs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(logs)
    ddp = torch.load(out, weights_only=False)
    assert ddp["batches"] == 6

    with pytorch.init(hparams=HPARAMS, seed=0) as ctx:
        trial, trainer = fit(ctx)
    for a, b in zip(ddp["weights"], trial.model.parameters(), strict=True):
        torch.testing.assert_close(a, b.detach(), rtol=1e-5, atol=1e-6)
    assert trainer.loop is not None
    assert ddp["validation"]["val_loss"] == pytest.approx(
        trainer.loop.last_validation["val_loss"], rel=1e-5
    )
    # Training metrics are averaged across workers per batch: the mean of two half-batch MSE
    # losses is the full-batch loss one worker sees.
    single = trial.averages.seen
    assert len(ddp["averages"]) == len(single) == 4  # at batches 2, 3 (validation), 4, 6
    for a, b in zip(ddp["averages"], single, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
