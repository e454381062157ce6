"""The trialkit.deepspeed API without training: config merging, model-parallel units from a
real DeepSpeed grid, imports that stay apart (no TensorFlow; no DeepSpeed from pytorch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("deepspeed")

from trialkit import deepspeed as tkds

REPO = Path(__file__).resolve().parents[2]


def test_one_rank_leaves_no_rendezvous_in_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # MASTER_PORT left behind by an in-process run was inherited by the trials of a master
    # started later from this process: their one-rank rendezvous found the port taken.
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with tkds.init(hparams={}) as ctx:
        assert ctx.distributed.size == 1
    leftover = {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"} & set(os.environ)
    assert not leftover


def test_overwrite_deepspeed_config_merges_recursively(tmp_path: Path) -> None:
    base = {"train_batch_size": 8, "zero_optimization": {"stage": 1, "overlap_comm": True}}
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(base))
    merged = tkds.overwrite_deepspeed_config(path, {"zero_optimization": {"stage": 3}, "x": 1})
    assert merged == {
        "train_batch_size": 8,
        "zero_optimization": {"stage": 3, "overlap_comm": True},
        "x": 1,
    }
    assert tkds.overwrite_deepspeed_config(base, None) == base
    assert base["zero_optimization"]["stage"] == 1  # the given dict is not changed


def test_overwrite_deepspeed_config_refuses_duplicate_keys_and_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "ds_config.json"
    path.write_text('{"train_batch_size": 8, "train_batch_size": 16}')
    with pytest.raises(ValueError, match="ds_config.json: duplicate key 'train_batch_size'"):
        tkds.overwrite_deepspeed_config(path, {})
    with pytest.raises(ValueError, match="missing.json: cannot be read"):
        tkds.overwrite_deepspeed_config(tmp_path / "missing.json", {})
    path.write_text("[1]")
    with pytest.raises(ValueError, match="expected a JSON object"):
        tkds.overwrite_deepspeed_config(path, {})


def test_mpus() -> None:
    from deepspeed.runtime.pipe.topology import PipeDataParallelTopology, PipelineParallelGrid

    with tkds.init(hparams={}) as ctx:
        assert tkds.make_data_parallel_mpu(ctx.distributed) == tkds.ModelParallelUnit(
            0, 1, True, True
        )
        grid = PipelineParallelGrid(topology=PipeDataParallelTopology(num_pp=1, num_dp=1))
        assert tkds.make_deepspeed_mpu(grid) == tkds.ModelParallelUnit(0, 1, True, True)


def _imported_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return {m.partition(".")[0] for m in out.split()}


def test_imports_stay_apart() -> None:
    assert "tensorflow" not in _imported_after("import trialkit.deepspeed")
    assert "deepspeed" not in _imported_after("import trialkit.pytorch")
