"""Trials on a Ray cluster (head + 2 worker nodes, separate processes on loopback) through a
master whose ``ray`` resource pool joins it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.integration.conftest import EXAMPLES, Master


def _core_api_example(tmp_path: Path, config_name: str, **overrides: Any) -> tuple[dict, Path]:
    model = tmp_path / "model"
    shutil.copytree(EXAMPLES / "core_api", model)
    config = yaml.safe_load((model / config_name).read_text())
    config.update(overrides)
    return config, model


def test_adaptive_asha_on_the_ray_pool_completes(ray_master: Master, tmp_path: Path) -> None:
    config, model = _core_api_example(
        tmp_path,
        "3_hpsearch.yaml",
        searcher={
            "name": "adaptive_asha",
            "metric": "loss",
            "smaller_is_better": True,
            "max_length": 40,
            "max_trials": 3,
            "max_concurrent_trials": 2,
            "mode": "aggressive",
        },
        resources={"resource_pool": "ray"},
    )
    exp_id = ray_master.create(config, model)
    desc = ray_master.wait_state(exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=400)
    trials = desc["trials"]
    assert desc["experiment"]["state"] == "COMPLETED", desc
    assert len(trials) == 3 and all(t["state"] == "COMPLETED" for t in trials), trials
    logs = ray_master.cli("trial", "logs", str(trials[0]["id"])).stdout
    assert "run 1: placed on Ray node(s)" in logs, logs


def _placements(logs: str) -> list[str]:
    return [ln for ln in logs.splitlines() if "placed on Ray node(s)" in ln]


def test_a_two_slot_torch_trial_spans_two_ray_nodes(ray_master: Master, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    model = tmp_path / "model"
    shutil.copytree(EXAMPLES / "torch_distributed", model)
    config = yaml.safe_load((model / "const.yaml").read_text())
    config["searcher"]["max_length"] = 2
    config["resources"] = {"slots_per_trial": 2, "resource_pool": "ray"}
    exp_id = ray_master.create(config, model)
    desc = ray_master.wait_state(exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=400)
    [trial] = desc["trials"]
    logs = ray_master.cli("trial", "logs", str(trial["id"])).stdout
    assert desc["experiment"]["state"] == "COMPLETED", logs
    [placed] = _placements(logs)
    nodes = re.findall(r"\(node (\w+)\)", placed)
    assert len(nodes) == 2 and nodes[0] != nodes[1], placed  # one bundle per node
    assert "[rank=0]" in logs and "[rank=1]" in logs, logs
