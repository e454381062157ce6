"""trialkit.config: defaults, hyperparameters, searchers, lengths, storage and the seed configs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trialkit.config import (
    ConfigError,
    ExperimentConfig,
    Length,
    S3Storage,
    SharedFSStorage,
    entrypoint_kind,
    load_config,
    parse_config,
    parse_searcher,
    with_defaults,
)


def errors_of(raw: dict[str, Any]) -> list[str]:
    """The messages parse_config raises for ``raw`` (fails the test if it parses)."""
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    return info.value.errors


def single(**extra: Any) -> dict[str, Any]:
    """A minimal valid config plus ``extra`` top-level keys."""
    return {"searcher": {"name": "single"}, **extra}


def write(tmp_path: Path, text: str, name: str = "const.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the seed configs ------------------------------------------------------------------------

STAGE3 = """
name: core-api-stage-3
entrypoint: python3 3_hpsearch.py
hyperparameters:
  increment_by:
    type: int
    minval: 1
    maxval: 8
searcher:
  name: adaptive_asha
  metric: x
  smaller_is_better: true
  max_length: 100
  max_trials: 10
max_restarts: 0
"""

TIMM_STEP4 = """
name: core-api-timm-step4
entrypoint: >-
  python -m determined.launch.torch_distributed
  python step4-hyperparameters.py --epochs 5
max_restarts: 0
hyperparameters:
  lr: {type: log, base: 10, minval: -2, maxval: -1, count: 5}
resources: {slots_per_trial: 2}
searcher: {name: grid, max_length: 5, metric: val_loss}
"""

MNIST_CONST = """
name: mnist_pytorch_const
data: {url: "https://example.com/mnist.tar.gz"}
hyperparameters: {learning_rate: 1.0, n_filters1: 32, n_filters2: 64, dropout1: 0.25, dropout2: 0.5}
searcher: {name: single, metric: validation_loss, max_length: {batches: 937}, smaller_is_better: true}
records_per_epoch: 60000
entrypoint: model_def:MNistTrial
"""

IMAGENET_CONST = """
description: ImageNet_PyTorch_const
hyperparameters:
    global_batch_size: 256
    weight_decay: 1e-4
    pretrained: True
records_per_epoch: 60000
searcher:
    name: single
    metric: val_loss
    smaller_is_better: false
    max_length:
        epochs: 10
entrypoint: model_def:ImageNetTrial
max_restarts: 0
"""


def test_stage3_seed_parses(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, STAGE3))
    assert cfg.name == "core-api-stage-3"
    assert cfg.max_restarts == 0
    assert cfg.searcher.name == "adaptive_asha"
    assert cfg.searcher.max_length == Length(None, 100)
    assert cfg.searcher.generation == "0.37"
    assert (cfg.searcher.max_trials, cfg.searcher.divisor, cfg.searcher.max_rungs) == (10, 4, 5)
    assert cfg.searcher.stop_once is False
    assert cfg.hyperparameters == {
        "increment_by": {"type": "int", "minval": 1, "maxval": 8, "count": None}
    }
    assert entrypoint_kind(cfg.entrypoint) == "command"
    assert cfg.warnings == []


def test_timm_step4_seed_parses(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, TIMM_STEP4))
    assert cfg.entrypoint == (
        "python -m determined.launch.torch_distributed python step4-hyperparameters.py --epochs 5"
    )
    assert cfg.resources.slots_per_trial == 2
    assert cfg.hyperparameters["lr"] == {
        "type": "log",
        "minval": -2,
        "maxval": -1,
        "base": 10.0,
        "count": 5,
    }
    assert cfg.as_dict()["searcher"] == {
        "name": "grid",
        "metric": "val_loss",
        "smaller_is_better": True,
        "source_trial_id": None,
        "source_checkpoint_uuid": None,
        "max_length": 5,
        "max_concurrent_trials": 16,
    }


def test_mnist_const_seed_parses(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, MNIST_CONST))
    assert entrypoint_kind(cfg.entrypoint) == "trial_class"
    assert cfg.records_per_epoch == 60000
    assert cfg.data == {"url": "https://example.com/mnist.tar.gz"}
    assert cfg.searcher.max_length == Length("batches", 937)
    assert cfg.hyperparameters["dropout1"] == {"type": "const", "val": 0.25}
    assert list(cfg.hyperparameters) == sorted(cfg.hyperparameters)


def test_imagenet_const_seed_without_name_gets_the_default(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, IMAGENET_CONST))
    assert cfg.name == "trialkit-experiment"
    assert cfg.description == "ImageNet_PyTorch_const"
    assert cfg.searcher.smaller_is_better is False
    # YAML 1.2 numbers, as Determined's CLI reads them: 1e-4 is a float, not a string.
    assert cfg.hyperparameters["weight_decay"] == {"type": "const", "val": 0.0001}


def test_038_generation_seed_parses() -> None:
    cfg = parse_config(
        {
            "searcher": {
                "name": "adaptive_asha",
                "metric": "validation_loss",
                "max_trials": 16,
                "time_metric": "batches",
                "max_time": 937,
            }
        }
    )
    assert cfg.searcher.generation == "0.38"
    assert (cfg.searcher.time_metric, cfg.searcher.max_time) == ("batches", 937)
    assert cfg.searcher.max_length is None


def test_seed_002_legacy_entrypoint_script_is_folded_with_a_warning() -> None:
    cfg = parse_config(
        {
            "launch_layer": "python3 -m determined.launch.torch_distributed",
            "entrypoint_script": "python3 train_detectron.py",
            "searcher": {"name": "single", "max_length": {"epochs": 1}},
        }
    )
    assert (
        cfg.entrypoint
        == "python3 -m determined.launch.torch_distributed python3 train_detectron.py"
    )
    assert len(cfg.warnings) == 1 and cfg.warnings[0].startswith("entrypoint_script: legacy")
    assert "entrypoint_script" not in cfg.as_dict()


# --- defaults --------------------------------------------------------------------------------

MINIMAL_AS_DICT: dict[str, Any] = {
    "name": "trialkit-experiment",
    "description": None,
    "labels": [],
    "workspace": "",
    "project": "",
    "entrypoint": None,
    "hyperparameters": {},
    "searcher": {
        "name": "single",
        "metric": None,
        "smaller_is_better": True,
        "source_trial_id": None,
        "source_checkpoint_uuid": None,
        "max_length": None,
    },
    "resources": {
        "slots_per_trial": 1,
        "max_slots": None,
        "weight": 1.0,
        "priority": None,
        "resource_pool": "",
        "shm_size": None,
        "is_single_node": None,
        "devices": [],
        "native_parallel": False,
        "agent_label": None,
    },
    "max_restarts": 5,
    "records_per_epoch": 0,
    "scheduling_unit": 100,
    "min_validation_period": {"batches": 0},
    "min_checkpoint_period": {"batches": 0},
    "perform_initial_validation": False,
    "checkpoint_policy": "best",
    "checkpoint_storage": None,
    "data": {},
    "debug": False,
    "environment": {
        "python": None,
        "image": None,
        "environment_variables": {"cpu": [], "cuda": [], "rocm": []},
        "ports": {},
        "proxy_ports": [],
        "force_pull_image": False,
        "registry_auth": None,
        "add_capabilities": [],
        "drop_capabilities": [],
        "pod_spec": None,
    },
    "bind_mounts": [],
    "optimizations": {
        "aggregation_frequency": 1,
        "average_aggregated_gradients": True,
        "average_training_metrics": True,
        "gradient_compression": False,
        "mixed_precision": "O0",
        "tensor_fusion_threshold": 64,
        "tensor_fusion_cycle_time": 1,
        "auto_tune_tensor_fusion": False,
        "grad_updates_size_file": None,
    },
    "profiling": {
        "enabled": False,
        "begin_on_batch": 0,
        "end_after_batch": None,
        "sync_timings": True,
    },
    "reproducibility": {"experiment_seed": None},
    "preemption_timeout": None,
    "log_policies": [],
    "retention_policy": None,
    "integrations": None,
    "security": None,
    "slurm": None,
    "pbs": None,
    "tensorboard_storage": None,
    "data_layer": None,
    "internal": None,
}


def test_minimal_config_is_fully_defaulted() -> None:
    cfg = parse_config(single())
    assert cfg.as_dict() == MINIMAL_AS_DICT
    assert cfg.min_validation_period == Length("batches", 0)
    assert cfg.warnings == []


def test_as_dict_is_json_and_round_trips(tmp_path: Path) -> None:
    for text in (STAGE3, TIMM_STEP4, MNIST_CONST, IMAGENET_CONST):
        as_dict = load_config(write(tmp_path, text)).as_dict()
        assert json.loads(json.dumps(as_dict)) == as_dict
        assert parse_config(as_dict).as_dict() == as_dict


def test_null_selects_the_default() -> None:
    cfg = parse_config(
        {
            "searcher": {"name": "single", "smaller_is_better": None},
            "resources": None,
            "max_restarts": None,
            "hyperparameters": None,
        }
    )
    assert cfg.as_dict() == MINIMAL_AS_DICT


def test_per_searcher_defaults() -> None:
    raw = {"name": "async_halving", "metric": "m", "num_rungs": 3, "max_trials": 8}
    asha = parse_config({"searcher": raw | {"max_length": {"batches": 90}}}).as_dict()["searcher"]
    assert asha["divisor"] == 4 and asha["max_concurrent_trials"] == 16
    assert asha["stop_once"] is False and "mode" not in asha
    raw = {"name": "optuna", "metric": "m", "max_trials": 4, "time_metric": "b", "max_time": 8}
    optuna = parse_config({"searcher": raw}).searcher
    assert (optuna.sampler, optuna.pruner, optuna.sampler_kwargs) == (
        "TPESampler",
        "MedianPruner",
        {},
    )
    assert optuna.max_concurrent_trials == 16 and optuna.generation == "0.38"
    custom = parse_config({"searcher": {"name": "custom", "unit": "epochs"}}).as_dict()["searcher"]
    assert custom["unit"] == "epochs" and "max_trials" not in custom


def test_config_is_frozen() -> None:
    cfg = parse_config(single())
    with pytest.raises(pydantic.ValidationError):
        cfg.max_restarts = 1  # type: ignore[misc]


def test_with_defaults_fills_only_what_the_user_left_out() -> None:
    storage = {"type": "shared_fs", "host_path": "/tmp/ckpt"}
    filled = with_defaults(parse_config(single()), experiment_seed=7, checkpoint_storage=storage)
    assert filled.reproducibility.experiment_seed == 7
    assert isinstance(filled.checkpoint_storage, SharedFSStorage)
    assert filled.checkpoint_storage.host_path == "/tmp/ckpt"
    user = parse_config(
        single(
            reproducibility={"experiment_seed": 1},
            checkpoint_storage={"type": "s3", "bucket": "b"},
        )
    )
    kept = with_defaults(user, experiment_seed=7, checkpoint_storage=storage)
    assert kept.reproducibility.experiment_seed == 1
    assert isinstance(kept.checkpoint_storage, S3Storage)


# --- hyperparameters -------------------------------------------------------------------------


def test_every_hyperparameter_type_is_normalized() -> None:
    cfg = parse_config(
        single(
            hyperparameters={
                "c": {"type": "const", "val": [1, 2]},
                "i": {"type": "int", "minval": 1, "maxval": 4},
                "d": {"type": "double", "minval": 0.1, "maxval": 0.5, "count": 3},
                "l": {"type": "log", "minval": -4, "maxval": -1},
                "k": {"type": "categorical", "vals": ["adam", "sgd", None]},
                "bare": 3,
                "bare_list": [1, 2],
                "bare_null": None,
            }
        )
    )
    assert cfg.hyperparameters == {
        "bare": {"type": "const", "val": 3},
        "bare_list": {"type": "const", "val": [1, 2]},
        "bare_null": {"type": "const", "val": None},
        "c": {"type": "const", "val": [1, 2]},
        "d": {"type": "double", "minval": 0.1, "maxval": 0.5, "count": 3},
        "i": {"type": "int", "minval": 1, "maxval": 4, "count": None},
        "k": {"type": "categorical", "vals": ["adam", "sgd", None]},
        "l": {"type": "log", "minval": -4, "maxval": -1, "base": 10.0, "count": None},
    }


def test_nested_hyperparameter_groups_any_depth() -> None:
    raw = {"optim": {"name": "adam", "inner": {"lr": {"type": "double", "minval": 0, "maxval": 1}}}}
    cfg = parse_config(single(hyperparameters=raw | {"empty": {}}))
    assert cfg.hyperparameters == {
        "empty": {},
        "optim": {
            "inner": {"lr": {"type": "double", "minval": 0, "maxval": 1, "count": None}},
            "name": {"type": "const", "val": "adam"},
        },
    }


def test_non_string_hyperparameter_names_become_strings() -> None:
    cfg = parse_config(single(hyperparameters={1: 2}))
    assert cfg.hyperparameters == {"1": {"type": "const", "val": 2}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"type": "flaot"},
            "hyperparameters.x.type: unknown type 'flaot'; expected one of const, int, double, "
            "log, categorical",
        ),
        (
            {"type": "int", "minval": 1.5, "maxval": 4},
            "hyperparameters.x.minval: expected an integer, got 1.5",
        ),
        (
            {"type": "double", "minval": 2, "maxval": 1},
            "hyperparameters.x.maxval: must be greater than minval (2), got 1; swap or widen the range",
        ),
        (
            {"type": "log", "minval": 1, "maxval": 2, "base": 0},
            "hyperparameters.x.base: expected a number > 0, got 0",
        ),
        (
            {"type": "int", "minval": 1, "maxval": 2, "count": 0},
            "hyperparameters.x.count: expected an integer >= 1, got 0",
        ),
        (
            {"type": "categorical", "vals": []},
            "hyperparameters.x.vals: expected a non-empty list of values, got []",
        ),
        ({"type": "const"}, "hyperparameters.x.val: required for a const hyperparameter; add it"),
        (
            {"type": "int", "minval": 1, "maxvl": 2},
            "hyperparameters.x.maxval: required for a int hyperparameter; add it",
        ),
        (
            {"type": "int", "minval": 1, "maxval": 2, "maxvl": 2},
            "hyperparameters.x.maxvl: unknown key; did you mean maxval?",
        ),
        (
            {"type": "double", "minval": True, "maxval": 2},
            "hyperparameters.x.minval: expected a number, got True",
        ),
    ],
)
def test_hyperparameter_errors_name_the_path(spec: dict[str, Any], expected: str) -> None:
    assert expected in errors_of(single(hyperparameters={"x": spec}))


def test_unknown_type_suggests_a_close_one() -> None:
    (message,) = errors_of(single(hyperparameters={"a": {"b": {"type": "doubel"}}}))
    assert message.startswith("hyperparameters.a.b.type: unknown type 'doubel'")
    assert message.endswith("(did you mean double?)")


def test_grid_requires_count_on_every_ranged_hyperparameter() -> None:
    hps = {
        "a": {"type": "int", "minval": 1, "maxval": 3},
        "b": {"type": "double", "minval": 0, "maxval": 1, "count": 2},
        "n": {"deep": {"c": {"type": "log", "minval": -3, "maxval": -1}}},
        "k": {"type": "categorical", "vals": [1, 2]},
    }
    assert errors_of({"searcher": {"name": "grid", "metric": "m"}, "hyperparameters": hps}) == [
        "hyperparameters.a.count: required by the grid searcher; add count: N (grid points on this axis)",
        "hyperparameters.n.deep.c.count: required by the grid searcher; add count: N (grid points on this axis)",
    ]
    random = {"name": "random", "metric": "m", "max_trials": 2}
    assert parse_config({"searcher": random, "hyperparameters": hps}).hyperparameters["a"]


# --- searchers and the two length generations ----------------------------------------------


@pytest.mark.parametrize(
    ("searcher", "missing"),
    [
        ({"name": "random", "metric": "m"}, "max_trials"),
        ({"name": "random", "max_trials": 2}, "metric"),
        ({"name": "grid"}, "metric"),
        ({"name": "adaptive_asha", "metric": "m", "max_length": 10}, "max_trials"),
        (
            {"name": "async_halving", "metric": "m", "max_trials": 2, "max_length": {"epochs": 1}},
            "num_rungs",
        ),
        (
            {"name": "async_halving", "num_rungs": 2, "max_trials": 2, "max_length": {"epochs": 1}},
            "metric",
        ),
        ({"name": "optuna", "metric": "m", "max_length": 8}, "max_trials"),
    ],
)
def test_every_searchers_required_fields(searcher: dict[str, Any], missing: str) -> None:
    (message,) = errors_of({"searcher": searcher})
    assert message.startswith(f"searcher.{missing}: required by the {searcher['name']} searcher")


def test_checks_the_search_methods_made_are_in_the_config() -> None:
    """What the searcher package checked on its own (a second model) is the config's now."""
    (message,) = errors_of({"searcher": {"name": "optuna", "metric": "m", "max_trials": 2}})
    assert message.startswith("searcher: optuna needs a training length; give time_metric")
    asha = {"name": "adaptive_asha", "metric": "m", "max_trials": 2, "max_length": 0}
    assert errors_of({"searcher": asha}) == [
        "searcher.max_length: adaptive_asha needs a length >= 1, got 0; give the top rung's length"
    ]


def test_parse_searcher_reports_every_problem_at_its_searcher_path() -> None:
    assert parse_searcher({"name": "single", "metric": None}).metric is None
    with pytest.raises(ConfigError) as info:
        parse_searcher({"name": "random", "max_trials": 0, "max_concurrent_trials": -1})
    assert info.value.errors == [
        "searcher.max_concurrent_trials: expected an integer between 0 and 100000, got -1",
        "searcher.max_trials: expected an integer between 1 and 100000, got 0",
        "searcher.metric: required by the random searcher; add metric: validation_loss",
    ]


def test_single_and_custom_need_nothing_but_a_name() -> None:
    assert parse_config(single()).searcher.metric is None
    assert parse_config({"searcher": {"name": "custom"}}).searcher.unit is None


@pytest.mark.parametrize(
    ("name", "replacement"),
    [
        ("adaptive_simple", "adaptive_asha"),
        ("sync_halving", "async_halving"),
    ],
)
def test_removed_searchers(name: str, replacement: str) -> None:
    assert errors_of({"searcher": {"name": name, "metric": "m"}}) == [
        f"searcher.name: {name!r} has been removed; use {replacement}"
    ]


def test_unknown_and_missing_searcher_names() -> None:
    assert errors_of({"searcher": {"name": "radnom"}}) == [
        "searcher.name: unknown searcher 'radnom'; did you mean random?"
    ]
    assert errors_of({"searcher": {}})[0].startswith("searcher.name: required; use one of single,")
    assert errors_of({}) == ["searcher: required; add it"]


def test_a_key_of_another_searcher_is_unknown() -> None:
    searcher = {"name": "random", "metric": "m", "max_trials": 2, "num_rungs": 3}
    assert errors_of({"searcher": searcher}) == [
        "searcher.num_rungs: unknown key for the random searcher; remove it (used only by async_halving)"
    ]


ASHA = {"name": "adaptive_asha", "metric": "m", "max_trials": 4}


def test_length_generations() -> None:
    old = parse_config({"searcher": ASHA | {"max_length": {"epochs": 3}}}).searcher
    new = parse_config({"searcher": ASHA | {"time_metric": "batches", "max_time": 100}}).searcher
    assert (old.generation, old.max_length) == ("0.37", Length("epochs", 3))
    assert (new.generation, new.time_metric, new.max_time) == ("0.38", "batches", 100)
    assert parse_config(single()).searcher.generation == "0.38"


def test_mixing_the_generations_is_an_error() -> None:
    both = ASHA | {"max_length": 10, "time_metric": "batches", "max_time": 10}
    (message,) = errors_of({"searcher": both})
    assert message.startswith("searcher.max_length: cannot be combined with time_metric/max_time")
    assert "0.37" in message and "0.38" in message


@pytest.mark.parametrize(
    ("given", "missing"), [("time_metric", "max_time"), ("max_time", "time_metric")]
)
def test_half_of_the_038_pair_is_an_error(given: str, missing: str) -> None:
    value = "batches" if given == "time_metric" else 10
    for name in ("adaptive_asha", "optuna"):
        (message,) = errors_of({"searcher": ASHA | {"name": name, given: value}})
        assert message.startswith(f"searcher.{missing}: required together with {given} (0.38")
        assert "max_length (0.37" in message


def test_asha_searchers_need_a_length() -> None:
    (message,) = errors_of({"searcher": ASHA})
    assert message.startswith("searcher: adaptive_asha needs a training length")


def test_async_halving_rejects_a_bare_int_max_length() -> None:
    raw = {"name": "async_halving", "metric": "m", "num_rungs": 2, "max_trials": 4}
    assert errors_of({"searcher": raw | {"max_length": 100}}) == [
        "searcher.max_length: async_halving needs {batches|records|epochs: N}, got 100; "
        "write {batches: 100}"
    ]
    assert parse_config({"searcher": raw | {"max_length": {"records": 100}}}).searcher.max_length


def test_searcher_ranges() -> None:
    bad = ASHA | {"max_time": 0, "time_metric": "b", "divisor": 1, "max_rungs": 0, "max_trials": 0}
    assert errors_of({"searcher": bad}) == [
        "searcher.divisor: expected a number > 1, got 1",
        "searcher.max_rungs: expected an integer between 1 and 64, got 0",
        "searcher.max_time: expected an integer between 1 and 2147483647, got 0",
        "searcher.max_trials: expected an integer between 1 and 100000, got 0",
    ]


# --- lengths ---------------------------------------------------------------------------------


def test_length_parsing_edge_cases() -> None:
    cfg = parse_config(
        single(min_validation_period={"epochs": 0}, min_checkpoint_period={"records": 5})
    )
    assert cfg.min_validation_period == Length("epochs", 0)
    assert cfg.as_dict()["min_checkpoint_period"] == {"records": 5}
    assert parse_config(
        {"searcher": {"name": "single", "max_length": 0}}
    ).searcher.max_length == Length(None, 0)
    assert errors_of(single(min_validation_period={"batches": 1, "epochs": 2})) == [
        "min_validation_period: expected exactly one of batches, records, epochs, got "
        "{'batches': 1, 'epochs': 2}; keep one unit"
    ]
    assert errors_of(single(min_checkpoint_period=5)) == [
        "min_checkpoint_period: expected {batches|records|epochs: N}, got a bare integer 5; "
        "write {batches: 5}"
    ]
    assert errors_of({"searcher": {"name": "single", "max_length": {"batches": 0}}}) == [
        "searcher.max_length: expected {batches: N} with an integer N >= 1, got {'batches': 0}"
    ]
    assert errors_of(single(min_validation_period={"steps": 3})) == [
        "min_validation_period: unknown unit 'steps'; use batches, records or epochs"
    ]
    assert errors_of(single(min_validation_period={"epoch": 3})) == [
        "min_validation_period: unknown unit 'epoch'; did you mean epochs?"
    ]


def test_length_api() -> None:
    assert Length.parse({"batches": 3}) == Length("batches", 3)
    assert Length.parse(7).to_raw() == 7 and str(Length("epochs", 2)) == "2 epochs"
    for bad in (True, -1, "3", {"batches": -1}, {}, 2**31, {"epochs": 10**30}):
        with pytest.raises(ValueError):
            Length.parse(bad)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["batches", "records", "epochs", None]), st.integers(0, 2**31 - 1))
def test_length_round_trips(unit: Any, value: int) -> None:
    length = Length(unit, value)
    assert Length.parse(length.to_raw()) == length


# --- sections --------------------------------------------------------------------------------


def test_checkpoint_storage_types() -> None:
    shared = parse_config(
        single(checkpoint_storage={"type": "shared_fs", "host_path": "/h", "checkpoint_path": "c"})
    )
    assert shared.as_dict()["checkpoint_storage"] == {
        "save_experiment_best": 0,
        "save_trial_best": 1,
        "save_trial_latest": 1,
        "type": "shared_fs",
        "host_path": "/h",
        "storage_path": "c",
        "propagation": "rprivate",
        "container_path": None,
        "tensorboard_path": None,
    }
    for storage in (
        {"type": "directory", "container_path": "/ckpt"},
        {"type": "s3", "bucket": "b", "prefix": "runs/a", "endpoint_url": "http://minio"},
        {"type": "gcs", "bucket": "b"},
        {"type": "azure", "container": "c", "account_url": "https://x", "credential": "k"},
        {"type": "azure", "container": "c", "connection_string": "cs"},
    ):
        cfg = parse_config(single(checkpoint_storage=storage | {"save_trial_best": 3}))
        assert cfg.checkpoint_storage is not None
        assert cfg.checkpoint_storage.type == storage["type"]
        assert cfg.checkpoint_storage.save_trial_best == 3


@pytest.mark.parametrize(
    ("storage", "expected"),
    [
        (
            {"type": "nfs"},
            "checkpoint_storage.type: unknown type 'nfs'; use one of shared_fs, directory, s3, gcs, azure",
        ),
        ({"type": "shared_fs"}, "checkpoint_storage.host_path: required for shared_fs; add it"),
        (
            {"type": "s3", "bucket": "b", "prefix": "a/../b"},
            "checkpoint_storage.prefix: must not contain '..'",
        ),
        (
            {"type": "azure", "container": "c"},
            "checkpoint_storage: give exactly one of connection_string",
        ),
        (
            {"type": "azure", "container": "c", "connection_string": "s", "credential": "k"},
            "checkpoint_storage: credential goes with account_url",
        ),
        (
            {"type": "shared_fs", "host_path": "/h", "checkpoint_path": "a", "storage_path": "b"},
            "checkpoint_storage: checkpoint_path is the legacy name of storage_path",
        ),
        (
            {"type": "gcs", "bucket": "b", "buckt": 1},
            "checkpoint_storage.buckt: unknown key; did you mean bucket?",
        ),
    ],
)
def test_checkpoint_storage_errors(storage: dict[str, Any], expected: str) -> None:
    (message,) = errors_of(single(checkpoint_storage=storage))
    assert message.startswith(expected)


def test_environment_variables_list_and_per_device_forms() -> None:
    flat = parse_config(single(environment={"environment_variables": ["A=1", "B=x=y"]}))
    assert flat.environment.environment_variables == ["A=1", "B=x=y"]
    assert flat.environment.variables_for_slots(gpus=True) == ["A=1", "B=x=y"]
    per_device = {"cpu": ["A=cpu"], "gpu": ["A=gpu"]}
    env = parse_config(single(environment={"environment_variables": per_device})).environment
    assert env.environment_variables == ["A=cpu"]
    assert env.variables_for_slots(gpus=True) == ["A=gpu"]
    assert env.variables_for_slots(gpus=False) == ["A=cpu"]
    assert env.variables_for("rocm") == []
    assert errors_of(single(environment={"environment_variables": ["NOEQUALS"]})) == [
        "environment.environment_variables[0]: expected \"KEY=VALUE\", got 'NOEQUALS'"
    ]


def test_resources_and_reproducibility_ranges() -> None:
    assert errors_of(single(resources={"slots_per_trial": -1, "priority": 100})) == [
        "resources.priority: expected an integer between 1 and 99, got 100",
        "resources.slots_per_trial: expected an integer >= 0, got -1",
    ]
    assert parse_config(single(reproducibility={"experiment_seed": 2**32 - 1}))
    assert errors_of(single(reproducibility={"experiment_seed": 2**32})) == [
        "reproducibility.experiment_seed: expected an integer between 0 and 4294967295, got 4294967296"
    ]


def test_optimizations_and_profiling() -> None:
    cfg = parse_config(
        single(optimizations={"aggregation_frequency": 4}, profiling={"enabled": True})
    )
    assert cfg.optimizations.aggregation_frequency == 4 and cfg.profiling.enabled
    assert errors_of(single(profiling={"begin_on_batch": 5, "end_after_batch": 2})) == [
        "profiling: end_after_batch (2) is before begin_on_batch (5); swap them"
    ]


@pytest.mark.parametrize(
    ("entrypoint", "kind"),
    [
        ("model_def:MyTrial", "trial_class"),
        ("pkg.mod:Cls", "trial_class"),
        ("python3 train.py", "command"),
        ("model_def: MyTrial", "command"),
        ("python3 -m trialkit.launch.torch_distributed -- python3 train.py", "command"),
        (["python3", "train.py"], "argv"),
        (None, "none"),
    ],
)
def test_entrypoint_kind(entrypoint: Any, kind: str) -> None:
    assert entrypoint_kind(entrypoint) == kind


def test_experiment_config_model_validate_equals_parse_config() -> None:
    raw = single(hyperparameters={"a": 1})
    assert ExperimentConfig.model_validate(raw).as_dict() == parse_config(raw).as_dict()
