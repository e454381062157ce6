"""Seed 002's step-0 script under the master: ``bind_mounts`` make ``./checkpoint_dir`` (and an
absolute path) links to their host paths, so what the script saves there lands on the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Master, write_script

pytestmark = pytest.mark.integration

STEP_0 = """
import pathlib
path = "checkpoint_dir/my_checkpoint"
with open(path, "w") as f:
    f.write("weights")
print(open(pathlib.Path(ABS) / "input.txt").read())
"""


def test_seed_002_step_0_saves_through_its_bind_mount(master: Master, tmp_path: Path) -> None:
    ckpts, data = tmp_path / "host" / "checkpoints", tmp_path / "host" / "data"
    data.mkdir(parents=True)
    (data / "input.txt").write_text("from the host")
    model = tmp_path / "model"
    write_script(model, "train.py", f"ABS = {str(tmp_path / 'mnt' / 'data')!r}\n" + STEP_0)
    (tmp_path / "mnt").mkdir()
    config = {
        "entrypoint_script": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"epochs": 1}},
        "bind_mounts": [
            {"host_path": str(ckpts), "container_path": "./checkpoint_dir"},
            {
                "host_path": str(data),
                "container_path": str(tmp_path / "mnt" / "data"),
                "read_only": True,
            },
        ],  # fmt: skip
        "max_restarts": 0,
    }
    exp = master.create(config, model)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=60)
    logs = master.cli("trial", "logs", str(desc["trials"][0]["id"])).stdout
    assert desc["experiment"]["state"] == "COMPLETED", logs[-2000:]
    assert (ckpts / "my_checkpoint").read_text() == "weights"
    assert "from the host" in logs
