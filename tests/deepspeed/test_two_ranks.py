"""Two CPU ranks under DeepSpeed's own runner (trialkit.launch.deepspeed), local mode: for
ZeRO-1 and ZeRO-3 with gradient accumulation, and for two pipeline stages, a run stopped at
batch 5 and resumed from its sharded checkpoint ends with the weights of an uninterrupted run,
on both ranks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("deepspeed")

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_two_ranks_resume_exactly_from_sharded_checkpoints(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "TRIALKIT_HOME": str(home),
        "DS_ACCELERATOR": "cpu",
        "OMP_NUM_THREADS": "1",
        "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
    }
    script = [sys.executable, str(REPO / "tests/deepspeed/two_ranks.py"), "1", "3", "pipe"]
    p = subprocess.run(
        [sys.executable, "-m", "trialkit.launch.deepspeed", "--nproc-per-node", "2", "--", *script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    lines = re.findall(r"STAGE (\w+) rank (\d) of 2: resumed equals uninterrupted: (\w+)", out)
    assert sorted(lines) == [(s, r, "True") for s in ("1", "3", "pipe") for r in "01"], out[-4000:]
    ckpt = re.search(r"STAGE 3 rank 0 .* ckpt (\S+)", out)
    assert ckpt is not None
    path = home / "checkpoints" / ckpt.group(1)
    files = {str(f.relative_to(path)) for f in path.rglob("*") if f.is_file()}
    per_rank = {
        f"{name}{r}" for r in (0, 1) for name in ("det_state_dict_rank", "model0/zero_pp_rank_")
    }
    assert all(any(f.startswith(prefix) for f in files) for prefix in per_rank), sorted(files)
