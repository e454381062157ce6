"""A trial reads its experiment config through cluster info as the typed, frozen
``ExperimentConfig`` (parsed once, on first use), beside Determined's raw ``_config`` dict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic
import pytest

from trialkit import get_cluster_info
from trialkit.config import ExperimentConfig, Length, parse_config
from trialkit.contract._cluster_info import INFO_ENV

RAW = {
    "entrypoint": "model_def:Trial",
    "searcher": {"name": "single", "metric": "acc", "smaller_is_better": False,
                 "max_length": {"batches": 8}},
    "min_validation_period": {"batches": 4},
    "data": {"path": "/data"},
}  # fmt: skip


def _write_info(tmp_path: Path, config: dict[str, Any]) -> Path:
    trial = {"trial_id": 3, "experiment_id": 1, "trial_seed": 7, "hparams": {}, "config": config}
    path = tmp_path / "cluster_info.json"
    path.write_text(json.dumps({"master_url": "http://127.0.0.1:1", "trial": trial}))
    return path


def test_the_typed_config_is_the_masters_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = parse_config(RAW).as_dict()  # what the master writes into cluster info
    monkeypatch.setenv(INFO_ENV, str(_write_info(tmp_path, stored)))
    info = get_cluster_info()
    assert info is not None
    cfg = info.trial.experiment_config
    assert isinstance(cfg, ExperimentConfig) and cfg is info.trial.experiment_config  # once
    assert (cfg.searcher.metric, cfg.searcher.smaller_is_better) == ("acc", False)
    assert cfg.min_validation_period == Length("batches", 4)
    assert cfg.scheduling_unit == 100 and cfg.checkpoint_policy == "best"  # config's defaults
    assert info.trial.config == stored  # Determined's raw dict is still there
    assert info.user_data == {"path": "/data"}
    with pytest.raises(pydantic.ValidationError):
        cfg.scheduling_unit = 1  # type: ignore[misc]


def test_a_config_that_does_not_parse_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(INFO_ENV, str(_write_info(tmp_path, {**RAW, "scheduling_unit": 0})))
    info = get_cluster_info()
    assert info is not None
    assert info.trial.config["scheduling_unit"] == 0  # reading the raw dict never parses
    with pytest.raises(RuntimeError) as caught:
        _ = info.trial.experiment_config
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("cluster info: the experiment config of trial 3 does not parse")
    assert "scheduling_unit: expected an integer >= 1, got 0" in message


def test_reading_cluster_info_does_not_load_the_config_models(tmp_path: Path) -> None:
    """Parsing is lazy: a Core API script that never reads the typed config loads no pydantic."""
    code = (
        "import sys, trialkit.core; info = trialkit.get_cluster_info();"
        "assert info.trial.config['entrypoint'];"
        "assert 'pydantic' not in sys.modules and 'trialkit.config' not in sys.modules"
    )
    env = {**os.environ, INFO_ENV: str(_write_info(tmp_path, parse_config(RAW).as_dict()))}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_a_nodes_rank_written_into_the_cluster_info_json_is_the_rank_it_reads() -> None:
    """The Ray pool writes each node's copy of the cluster info with its own container rank
    (``_ray_pool._run_files``): a rendezvous block repeating the chief's rank beside it made every
    node read rank 0, and both torch_distributed launchers of a two-node trial tried to host the
    rendezvous store (EADDRINUSE)."""
    from trialkit.contract._cluster_info import ClusterInfo

    info = ClusterInfo(
        master_url="http://127.0.0.1:1",
        cluster_id="c",
        agent_id="a",
        task_id="t",
        allocation_id="t.1",
        session_token="s",
        container_addrs=["a", "b"],
        slot_ids=[0],
    )
    data = info._to_json()
    data["container_rank"] = 1
    node = ClusterInfo._from_json(json.loads(json.dumps(data)))
    assert node.container_rank == 1
    assert node.rendezvous_info.container_rank == 1
    assert node.container_addrs == ["a", "b"]
