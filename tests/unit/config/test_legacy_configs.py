"""Determined 0.26-0.38 configs load as they are, and every legacy key has the outcome that
trialkit.config._legacy's table (rendered on docs/reference/legacy-configs.md) says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trialkit.config import ConfigError, Length, load_config, parse_config
from trialkit.config._legacy import legacy_keys
from trialkit.master.search._create import _trial_class_length

# Determined 0.26 (2023): Trial class, records_per_epoch, per-device images, bind mounts,
# Horovod-era optimizations, profiling window, tensorboard_storage and data_layer.
V026 = """
name: mnist_pytorch_distributed
description: 0.26-style config
data:
  url: https://example.com/mnist.tar.gz
hyperparameters:
  learning_rate: 1.0
  global_batch_size: 64
  n_filters1: 32
  dropout: {type: double, minval: 0.2, maxval: 0.5}
records_per_epoch: 60000
scheduling_unit: 50
min_validation_period: {batches: 200}
min_checkpoint_period: {epochs: 1}
searcher:
  name: adaptive_asha
  metric: validation_loss
  smaller_is_better: true
  max_length: {batches: 937}
  max_trials: 16
  mode: aggressive
  stop_once: true
resources:
  slots_per_trial: 2
  agent_label: gpu-pool
  native_parallel: false
environment:
  image:
    cpu: determinedai/environments:py-3.8-pytorch-1.12-cpu-0.26.0
    gpu: determinedai/environments:cuda-11.3-pytorch-1.12-gpu-0.26.0
  environment_variables:
    cpu: [OMP_NUM_THREADS=1]
    gpu: [NCCL_DEBUG=INFO]
bind_mounts:
  - host_path: /data
    container_path: /mnt/data
    read_only: true
checkpoint_storage:
  type: shared_fs
  host_path: /tmp
  checkpoint_path: determined-checkpoint
  save_trial_best: 1
tensorboard_storage:
  type: shared_fs
  host_path: /tmp/tb
data_layer:
  type: shared_fs
optimizations:
  aggregation_frequency: 2
  average_aggregated_gradients: true
  average_training_metrics: false
  mixed_precision: O1
  gradient_compression: true
  tensor_fusion_threshold: 100
profiling:
  enabled: true
  begin_on_batch: 10
  end_after_batch: 20
entrypoint: model_def:MNistTrial
max_restarts: 2
"""

# Determined 0.32 (2024): Core API script with a launcher, a unitless max_length, env list.
V032 = """
name: core-api-stage-4
entrypoint: >-
  python3 -m determined.launch.torch_distributed
  python3 train.py
hyperparameters:
  increment_by: 1
resources:
  slots_per_trial: 2
  resource_pool: default
environment:
  image: determinedai/pytorch-ngc-dev:0.32.0
  environment_variables: [A=1]
searcher:
  name: random
  metric: x
  max_length: 100
  max_trials: 4
max_restarts: 0
"""

# Determined 0.37 (2024): grid search, searcher operations, async_halving with units.
V037 = """
name: core-api-timm-step4
entrypoint: python step4.py --epochs 5
max_restarts: 0
hyperparameters:
  lr: {type: log, base: 10, minval: -2, maxval: -1, count: 5}
searcher:
  name: grid
  max_length: 5
  metric: val_loss
workspace: research
project: cifar
"""

# Determined 0.38 (2025): time_metric + max_time, no max_length.
V038 = """
name: iris_tf_keras_adaptive
entrypoint: model_def:IrisTrial
hyperparameters:
  global_batch_size: 30
  learning_rate: {type: double, minval: 0.0001, maxval: 0.1}
searcher:
  name: adaptive_asha
  metric: val_categorical_accuracy
  smaller_is_better: false
  time_metric: batches
  max_time: 500
  max_trials: 8
min_validation_period: {batches: 50}
"""


def _load(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return load_config(path)


def test_026_config(tmp_path: Path) -> None:
    cfg = _load(tmp_path, V026)
    assert cfg.searcher.max_length == Length("batches", 937)
    assert (cfg.searcher.stop_once, cfg.searcher.mode) == (True, "aggressive")
    assert cfg.records_per_epoch == 60000
    assert cfg.scheduling_unit == 50
    assert cfg.min_validation_period == Length("batches", 200)
    assert cfg.min_checkpoint_period == Length("epochs", 1)
    assert cfg.optimizations.aggregation_frequency == 2
    assert cfg.environment.variables_for("cuda") == ["NCCL_DEBUG=INFO"]
    assert cfg.checkpoint_storage.storage_path == "determined-checkpoint"
    assert _trial_class_length(cfg) == []
    warned = {line.split(":")[0] for line in cfg.warnings}
    assert warned == {
        "environment.image",
        "resources.agent_label",
        "tensorboard_storage",
        "data_layer",
        "optimizations.average_training_metrics",
        "optimizations.mixed_precision",
        "optimizations.gradient_compression",
        "optimizations.tensor_fusion_threshold",
        "profiling.begin_on_batch",
        "profiling.end_after_batch",
    }, cfg.warnings
    assert all(": ignored (" in line for line in cfg.warnings)


def test_032_config(tmp_path: Path) -> None:
    cfg = _load(tmp_path, V032)
    assert cfg.searcher.max_length == Length(None, 100)
    assert cfg.searcher.generation == "0.37"
    assert cfg.warnings == [
        "environment.image: ignored (trials run as local processes, not containers)"
    ]


def test_037_config(tmp_path: Path) -> None:
    cfg = _load(tmp_path, V037)
    assert cfg.searcher.max_length == Length(None, 5)
    assert cfg.hyperparameters["lr"]["count"] == 5
    assert cfg.warnings == [
        "workspace: ignored (trialkit has no workspaces)",
        "project: ignored (trialkit has no projects)",
    ]


def test_038_config(tmp_path: Path) -> None:
    cfg = _load(tmp_path, V038)
    assert cfg.searcher.generation == "0.38"
    assert (cfg.searcher.time_metric, cfg.searcher.max_time) == ("batches", 500)
    assert _trial_class_length(cfg) == []
    assert cfg.warnings == []


def _single(**extra: Any) -> dict[str, Any]:
    return {"searcher": {"name": "single", "metric": "loss", "max_length": 1}, **extra}


def _errors(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    return [str(e) for e in info.value.errors]


def _check_unitless_length() -> None:
    cfg = parse_config(_single())
    assert cfg.searcher.max_length == Length(None, 1)
    [refused] = _trial_class_length(cfg.model_copy(update={"entrypoint": "model_def:T"}))
    assert "max_length 1 has no unit" in refused and "{batches|records|epochs: N}" in refused
    raw = {"searcher": {"name": "async_halving", "metric": "m", "num_rungs": 2, "max_trials": 2}}
    raw["searcher"]["max_length"] = 7
    assert any("write {batches: 7}" in e for e in _errors(raw))


def _check_removed(name: str, replacement: str) -> None:
    raw = {"searcher": {"name": name, "metric": "loss", "max_length": {"batches": 1}}}
    assert _errors(raw) == [f"searcher.name: {name!r} has been removed; use {replacement}"]


def _check_renamed_adaptive() -> None:
    """Seed 002's ``adaptive`` search runs as adaptive_asha, with one note (issue 32, 15c)."""
    raw = {"searcher": {"name": "adaptive", "metric": "loss", "max_trials": 4}}
    raw["searcher"]["max_length"] = {"epochs": 4}
    cfg = parse_config(raw)
    assert cfg.searcher.name == "adaptive_asha" and cfg.searcher.max_trials == 4
    assert cfg.warnings == [
        "searcher.name: 'adaptive' is Determined's old name; running adaptive_asha "
        "(write name: adaptive_asha)"
    ]


def _used(**extra: Any) -> Any:
    cfg = parse_config(_single(**extra))
    assert cfg.warnings == []
    return cfg


#: How each handled key's outcome is observed (the ignored keys are checked generically).
CHECKS = {
    "searcher.max_length: N": _check_unitless_length,
    "searcher.max_length: {unit: N}": lambda: (
        parse_config(
            {"searcher": {"name": "single", "max_length": {"epochs": 3}}}
        ).searcher.max_length
        == Length("epochs", 3)
    ),
    "searcher.stop_once": lambda: (
        parse_config(
            {
                "searcher": {
                    "name": "adaptive_asha",
                    "metric": "m",
                    "max_trials": 2,
                    "max_length": 8,
                    "stop_once": True,
                }
            }
        ).searcher.stop_once
    ),
    "searcher.name: adaptive": lambda: _check_renamed_adaptive(),
    "searcher.name: adaptive_simple": lambda: _check_removed("adaptive_simple", "adaptive_asha"),
    "searcher.name: sync_halving": lambda: _check_removed("sync_halving", "async_halving"),
    "records_per_epoch": lambda: _used(records_per_epoch=500).as_dict()["records_per_epoch"] == 500,
    "scheduling_unit": lambda: _used(scheduling_unit=7).as_dict()["scheduling_unit"] == 7,
    "min_validation_period": lambda: (
        _used(min_validation_period={"records": 64}).as_dict()["min_validation_period"]
        == {"records": 64}
    ),
    "min_checkpoint_period": lambda: (
        _used(min_checkpoint_period={"epochs": 2}).as_dict()["min_checkpoint_period"]
        == {"epochs": 2}
    ),
    "optimizations.aggregation_frequency": lambda: (
        _used(optimizations={"aggregation_frequency": 4}).optimizations.aggregation_frequency == 4
    ),
    "optimizations.average_aggregated_gradients": lambda: (
        _used(optimizations={"average_aggregated_gradients": False}).as_dict()["optimizations"][
            "average_aggregated_gradients"
        ]
        is False
    ),
    "checkpoint_storage.checkpoint_path": lambda: (
        _used(
            checkpoint_storage={"type": "shared_fs", "host_path": "/tmp", "checkpoint_path": "c"}
        ).checkpoint_storage.storage_path
        == "c"
    ),
    "environment.environment_variables.gpu": lambda: (
        _used(environment={"environment_variables": {"gpu": ["X=1"]}}).environment.variables_for(
            "cuda"
        )
        == ["X=1"]
    ),
    "bind_mounts": lambda: (
        _used(bind_mounts=[{"host_path": "/data", "container_path": "c", "read_only": True}])
        .bind_mounts[0]
        .read_only
    ),
    "entrypoint_script / launch_layer": lambda: (
        parse_config(_single(entrypoint_script="train.py", launch_layer="python3")).warnings
        == ["entrypoint_script: legacy draft key; write entrypoint: 'python3 train.py' instead"]
    ),
}


@pytest.mark.parametrize("row", legacy_keys(), ids=lambda row: row.key)
def test_every_legacy_key_has_its_outcome(row: Any) -> None:
    if row.key in CHECKS:
        assert CHECKS[row.key]() in (True, None), row
        return
    # An ignored key: a non-default value is accepted with exactly the table's warning.
    section, _, key = row.key.rpartition(".")
    value = _NON_DEFAULT.get(row.key, "x")
    raw = _single(**({section: {key: value}} if section else {key: value}))
    assert row.outcome == "warned"
    assert parse_config(raw).warnings == [f"{row.key}: {row.what}"]


_NON_DEFAULT: dict[str, Any] = {
    "environment.force_pull_image": True,
    "environment.registry_auth": {"username": "u"},
    "environment.add_capabilities": ["NET_ADMIN"],
    "environment.drop_capabilities": ["NET_ADMIN"],
    "environment.pod_spec": {"spec": {}},
    "environment.ports": {"web": 8080},
    "environment.proxy_ports": [{"proxy_port": 8080}],
    "resources.shm_size": 4096,
    "resources.devices": [{"host_path": "/dev/x", "container_path": "/dev/x"}],
    "resources.priority": 10,
    "resources.weight": 2.0,
    "resources.max_slots": 4,
    "resources.is_single_node": True,
    "resources.native_parallel": True,
    "slurm": {"gpu_type": "a100"},
    "pbs": {"slots_per_node": 2},
    "security": {"kerberos": {}},
    "integrations": {"pachyderm": {}},
    "log_policies": [{"pattern": ".*OOM.*"}],
    "retention_policy": {"log_retention_days": 1},
    "tensorboard_storage": {"type": "shared_fs", "host_path": "/tmp"},
    "data_layer": {"type": "shared_fs"},
    "internal": {"x": 1},
    "profiling.begin_on_batch": 5,
    "profiling.end_after_batch": 9,
    "profiling.sync_timings": False,
    "optimizations.gradient_compression": True,
    "optimizations.tensor_fusion_threshold": 1,
    "optimizations.tensor_fusion_cycle_time": 5,
    "optimizations.auto_tune_tensor_fusion": True,
    "optimizations.grad_updates_size_file": "f",
    "optimizations.mixed_precision": "O1",
    "optimizations.average_training_metrics": False,
}


def test_every_handled_row_has_a_check() -> None:
    handled = {row.key for row in legacy_keys() if not row.what.startswith("ignored (")}
    assert handled == set(CHECKS)
