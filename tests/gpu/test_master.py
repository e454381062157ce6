"""The master on a GPU machine: the GPUs it finds (nvidia-smi) become its slots, a trial with
``slots_per_trial: 1`` sees exactly one GPU (CUDA_VISIBLE_DEVICES), and a search with more trials
than GPUs queues the rest: never more trials on the GPUs at once than there are GPUs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Master

pytestmark = [pytest.mark.gpu, pytest.mark.integration]

TRAIN = """
import json, os, time
import torch
from trialkit import core

with core.init() as ctx:
    start = time.time()
    x = torch.ones(512, 512, device="cuda")
    total = float((x @ x).sum())
    time.sleep(1.5)
    row = {"visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "count": torch.cuda.device_count(),
           "total": total, "start": start, "end": time.time()}
    with open(LOG, "a") as f:
        f.write(json.dumps(row) + "\\n")
    for op in ctx.searcher.operations():
        ctx.train.report_validation_metrics(steps_completed=op.length, metrics={"loss": 1.0})
        op.report_completed(1.0)
"""


def _config(trials: int) -> dict[str, Any]:
    return {
        "name": "gpu-slots",
        "entrypoint": "python3 train.py",
        "hyperparameters": {"n": {"type": "int", "minval": 0, "maxval": 1000}},
        "searcher": {"name": "random", "metric": "loss", "max_length": 1,
                     "max_trials": trials, "max_concurrent_trials": trials},
        "resources": {"slots_per_trial": 1},
        "max_restarts": 0,
    }  # fmt: skip


def _max_overlap(rows: list[dict[str, Any]]) -> int:
    events = sorted([(r["start"], 1) for r in rows] + [(r["end"], -1) for r in rows])
    now = peak = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def test_gpus_are_slots_and_trials_queue_for_them(
    cuda: int, master: Master, tmp_path: Path
) -> None:
    info = master.client.request("GET", "/api/v1/master")
    assert info["gpus"] is True and info["slots"] == cuda, info  # not the fixture's 2 CPU slots
    log = tmp_path / "trials.jsonl"
    model = tmp_path / "model"
    model.mkdir()
    (model / "train.py").write_text(f"LOG = {str(log)!r}\n" + TRAIN)
    trials = cuda + 2
    exp = master.create(_config(trials), model)
    state = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
    assert state["experiment"]["state"] == "COMPLETED", state
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == trials
    for r in rows:
        assert r["count"] == 1 and r["total"] == 512.0**3
        assert r["visible"] is not None and r["visible"].isdigit() and int(r["visible"]) < cuda
    assert _max_overlap(rows) <= cuda, rows
