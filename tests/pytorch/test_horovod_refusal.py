"""Issue 32 item 13: a PyTorchTrial under Horovod is refused in one line naming
torch_distributed (its harness averages gradients over DDP, which horovodrun does not set up),
by the launcher before horovodrun starts and by the harness on each rank horovodrun started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from trialkit.config import parse_config  # noqa: E402
from trialkit.contract._cluster_info import INFO_ENV  # noqa: E402
from trialkit.launch import horovod  # noqa: E402
from trialkit.launch._common import LaunchError  # noqa: E402

SPEC = "tests.pytorch.trials:RegressionTrial"
ROOT = Path(__file__).resolve().parents[2]


def test_the_horovod_launcher_refuses_a_pytorch_trial_on_two_ranks() -> None:
    for argv in (
        ["--dry-run", "--nproc-per-node", "2", "--trial", SPEC],
        [
            "--dry-run",
            "--nproc-per-node",
            "2",
            "--",
            "python3",
            "-m",
            "determined.exec.harness",
            SPEC,
        ],
    ):
        with pytest.raises(LaunchError) as caught:
            horovod.main(argv)
        line = str(caught.value)
        assert line.startswith(f"{SPEC} is a PyTorchTrial under the Horovod launcher")
        assert "python3 -m trialkit.launch.torch_distributed" in line and "\n" not in line
    # A plain script is not a Trial: the launcher still builds its command.
    assert horovod.main(["--dry-run", "--nproc-per-node", "2", "python3", "train.py"]) == 0


@pytest.mark.integration
def test_the_harness_refuses_on_a_rank_horovodrun_started(tmp_path: Path) -> None:
    """The harness run as horovodrun runs it (HOROVOD_RANK/SIZE, no WORLD_SIZE), under a
    master's cluster info: one line and exit 1 on each rank instead of training alone."""
    raw = {"entrypoint": SPEC, "searcher": {"name": "single", "metric": "loss", "max_length": 1}}
    trial = {"trial_id": 3, "experiment_id": 1, "trial_seed": 7, "hparams": {},
             "config": parse_config(raw).as_dict()}  # fmt: skip
    info = tmp_path / "cluster_info.json"
    info.write_text(json.dumps({"master_url": "http://127.0.0.1:1", "trial": trial}))
    env = {
        **os.environ,
        INFO_ENV: str(info),
        "HOROVOD_RANK": "1",
        "HOROVOD_SIZE": "2",
        "HOROVOD_LOCAL_RANK": "1",
        "HOROVOD_LOCAL_SIZE": "2",
        "HOROVOD_CROSS_RANK": "0",
        "HOROVOD_CROSS_SIZE": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    }
    env.pop("WORLD_SIZE", None)
    out = subprocess.run(
        [sys.executable, "-m", "trialkit.exec.harness", SPEC],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 1, out.stderr
    assert (
        out.stderr.strip()
        .splitlines()[-1]
        .startswith(f"error: {SPEC} is a PyTorchTrial under the Horovod launcher")
    ), out.stderr
