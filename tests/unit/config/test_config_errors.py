"""trialkit.config: error messages, ignored-key warnings, overrides and YAML file handling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trialkit.config import ConfigError, load_config, parse_config


def errors_of(raw: Any) -> list[str]:
    """The messages parse_config raises for ``raw`` (fails the test if it parses)."""
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    return info.value.errors


def single(**extra: Any) -> dict[str, Any]:
    """A minimal valid config plus ``extra`` top-level keys."""
    return {"searcher": {"name": "single"}, **extra}


# --- unknown keys and wrong types ------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (single(max_restart=1), "max_restart: unknown key; did you mean max_restarts?"),
        (
            {"searcher": {"name": "random", "metric": "m", "max_trials": 2, "max_trails": 4}},
            "searcher.max_trails: unknown key; did you mean max_trials?",
        ),
        (
            single(resources={"slot_per_trial": 2}),
            "resources.slot_per_trial: unknown key; did you mean slots_per_trial?",
        ),
        (
            single(checkpoint_storage={"type": "s3", "bucket": "b", "secret_kye": "s"}),
            "checkpoint_storage.secret_kye: unknown key; did you mean secret_key?",
        ),
        (single(environment={"imag": "x"}), "environment.imag: unknown key; did you mean image?"),
        (
            single(environment={"environment_variables": {"cuda": [], "cdu": []}}),
            "environment.environment_variables.cdu: unknown key; did you mean cpu?",
        ),
        (
            single(bind_mounts=[{"host_path": "/a", "container_path": "/b", "readonly": True}]),
            "bind_mounts[0].readonly: unknown key; did you mean read_only?",
        ),
        (
            single(optimizations={"aggregation_freq": 2}),
            "optimizations.aggregation_freq: unknown key; did you mean aggregation_frequency?",
        ),
    ],
)
def test_unknown_keys_at_every_depth_suggest_the_right_one(
    raw: dict[str, Any], expected: str
) -> None:
    assert errors_of(raw) == [expected]


def test_unknown_key_without_a_close_match_lists_the_valid_ones() -> None:
    assert errors_of(single(reproducibility={"zzz": 1})) == [
        "reproducibility.zzz: unknown key; remove it (valid keys: experiment_seed)"
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            single(resources={"slots_per_trial": "two"}),
            "resources.slots_per_trial: expected an integer >= 0, got 'two'",
        ),
        (single(max_restarts=True), "max_restarts: expected an integer >= 0, got True"),
        (single(max_restarts="4"), "max_restarts: expected an integer >= 0, got '4'"),
        (single(debug="yes"), "debug: expected true or false, got 'yes'"),
        (single(labels="a"), "labels: expected a list of strings, got 'a'"),
        (single(labels=["a", 3]), "labels[1]: expected a string, got 3"),
        (single(data=[1]), "data: expected a mapping, got [1]"),
        (single(resources=4), "resources: expected a mapping, got 4"),
        (
            single(checkpoint_policy="bset"),
            "checkpoint_policy: expected one of best, all, none, got 'bset'; did you mean best?",
        ),
        ({"searcher": "single"}, "searcher: expected a mapping, got 'single'"),
        (single(name=""), "name: must not be empty; give a short name, e.g. mnist-const"),
        (
            single(name="n" * 300),
            "name: is 300 characters long; keep it to 256 (put longer text in description)",
        ),
        (single(entrypoint=[]), "entrypoint: expected a command string"),
        (single(scheduling_unit=0), "scheduling_unit: expected an integer >= 1, got 0"),
        (
            {
                "searcher": {
                    "name": "adaptive_asha",
                    "metric": "m",
                    "max_trials": 2,
                    "max_length": 9,
                    "mode": "fast",
                }
            },
            "searcher.mode: expected one of standard, aggressive, conservative, got 'fast'",
        ),
        (
            single(bind_mounts=[{"host_path": "rel", "container_path": "/b"}]),
            "bind_mounts[0].host_path: must be an absolute path, got 'rel'",
        ),
        ([1, 2], "config: expected a mapping at the top level, got [1, 2]"),
    ],
)
def test_type_errors_are_one_line_with_the_path(raw: Any, expected: str) -> None:
    (message,) = errors_of(raw)
    assert message.startswith(expected)
    assert "\n" not in message and "pydantic" not in message


def test_all_errors_are_collected_deduplicated_and_sorted() -> None:
    raw = {
        "searcher": {"name": "random", "metric": "m", "max_trials": 0, "num_rungs": 1},
        "resources": {"slots_per_trial": "x"},
        "hyperparameters": {"b": {"type": "int", "minval": 0.5, "maxval": 1}, "a": {"type": "x"}},
        "max_restarts": -1,
        "extra": 1,
    }
    errors = errors_of(raw)
    assert [line.split(":")[0] for line in errors] == [
        "extra",
        "hyperparameters.a.type",
        "hyperparameters.b.minval",
        "max_restarts",
        "resources.slots_per_trial",
        "searcher.max_trials",
        "searcher.num_rungs",
    ]
    assert len(errors) == len(set(errors))


def test_config_error_is_a_value_error_with_one_line_per_problem() -> None:
    err = ConfigError(["a: x; y", "b: z; w"])
    assert isinstance(err, ValueError)
    assert str(err) == "a: x; y\nb: z; w"
    assert ConfigError(str(err)).errors == err.errors


# --- ignored keys ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "warning"),
    [
        (
            single(environment={"image": "pytorch:latest"}),
            "environment.image: ignored (trials run as local processes, not containers)",
        ),
        (single(environment={"force_pull_image": True}), "environment.force_pull_image: ignored"),
        (single(environment={"ports": {"tb": 6006}}), "environment.ports: ignored"),
        (single(resources={"priority": 10, "shm_size": "4G"}), "resources.priority: ignored"),
        (single(workspace="ws", project="p"), "workspace: ignored"),
        (single(slurm={"gpu_type": "a100"}), "slurm: ignored"),
        (single(log_policies=[{"pattern": "OOM"}]), "log_policies: ignored"),
        (
            single(profiling={"enabled": True, "begin_on_batch": 10}),
            "profiling.begin_on_batch: ignored",
        ),
        (single(optimizations={"mixed_precision": "O1"}), "optimizations.mixed_precision: ignored"),
        (
            single(optimizations={"tensor_fusion_threshold": 1}),
            "optimizations.tensor_fusion_threshold: ignored",
        ),
    ],
)
def test_ignored_keys_are_accepted_with_a_warning(raw: dict[str, Any], warning: str) -> None:
    warnings = parse_config(raw).warnings
    assert any(line.startswith(warning) for line in warnings), warnings
    assert all(": ignored (" in line for line in warnings)


def test_ignored_keys_at_their_defaults_give_no_warning() -> None:
    raw = single(
        resources={"resource_pool": "default", "weight": 1, "native_parallel": False},
        workspace="",
        profiling={"begin_on_batch": 0, "sync_timings": True},
        optimizations={"mixed_precision": "O0", "aggregation_frequency": 2},
        environment={"environment_variables": ["A=1"]},
    )
    assert parse_config(raw).warnings == []


def test_legacy_entrypoint_keys_errors() -> None:
    both = single(entrypoint="python3 a.py", entrypoint_script="python3 b.py")
    assert errors_of(both) == [
        "entrypoint_script: cannot be combined with entrypoint; keep only entrypoint"
    ]
    assert errors_of(single(launch_layer="python3 -m x")) == [
        "launch_layer: only valid with entrypoint_script; put the launcher in entrypoint instead"
    ]
    cfg = parse_config(single(entrypoint_script="python3 train.py"))
    assert cfg.entrypoint == "python3 train.py"
    assert cfg.warnings == [
        "entrypoint_script: legacy draft key; write entrypoint: 'python3 train.py' instead"
    ]


# --- overrides -------------------------------------------------------------------------------

RANDOM: dict[str, Any] = {
    "searcher": {"name": "random", "metric": "loss", "max_trials": 2, "max_length": 10},
    "hyperparameters": {"lr": {"type": "double", "minval": 0.001, "maxval": 0.01}},
}


def test_overrides_parse_values_as_yaml_and_create_new_keys() -> None:
    cfg = load_config(
        RANDOM,
        [
            "searcher.max_trials=4",
            "hyperparameters.lr.maxval=0.1",
            "labels=[a, b]",
            "data.paths.train=/data/train",
            "resources.slots_per_trial=0",
            "searcher.max_length={epochs: 2}",
        ],
    )
    assert cfg.searcher.max_trials == 4
    assert cfg.hyperparameters["lr"]["maxval"] == 0.1
    assert cfg.labels == ["a", "b"]
    assert cfg.data == {"paths": {"train": "/data/train"}}
    assert cfg.resources.slots_per_trial == 0
    assert cfg.searcher.max_length is not None and cfg.searcher.max_length.unit == "epochs"
    assert RANDOM["searcher"]["max_trials"] == 2  # the caller's mapping is untouched


def test_overrides_can_index_lists() -> None:
    raw = single(labels=["a", "b"])
    assert load_config(raw, ["labels.1=c"]).labels == ["a", "c"]


def test_bad_overrides_name_the_override() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(
            RANDOM, ["searcher.max_trials", "=3", "a..b=1", "hyperparameters.lr.type.x=1", "x=[1"]
        )
    assert info.value.errors[0] == (
        "override 'searcher.max_trials': missing '='; write key=value, e.g. searcher.max_trials=4"
    )
    assert info.value.errors[1].startswith("override '=3': empty key")
    assert info.value.errors[2].startswith("override 'a..b=1': empty key")
    assert info.value.errors[3] == (
        "override 'hyperparameters.lr.type.x=1': hyperparameters.lr.type is 'double', not a mapping; "
        "set hyperparameters.lr.type as a whole"
    )
    assert info.value.errors[4].startswith(
        "override 'x=[1': value is invalid YAML at line 1, column 3"
    )


def test_an_override_that_breaks_the_config_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(RANDOM, ["searcher.max_trials=many"])
    assert info.value.errors == [
        "searcher.max_trials: expected an integer between 1 and 100000, got 'many'"
    ]


# --- YAML files ------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors == [f"{path}: file not found; check the path"]


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nsearcher:\n  name: single\n  metric: [loss\nmax_restarts: 0\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    assert info.value.errors == [
        f"{path}: invalid YAML at line 5, column 13: expected ',' or ']', but got ':'; "
        "fix the syntax there"
    ]


def test_duplicate_yaml_keys_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("searcher:\n  name: single\nmax_restarts: 1\nmax_restarts: 2\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors == [
        f"{path}: invalid YAML at line 4, column 1: duplicate key 'max_restarts'; fix the syntax there"
    ]


def test_yaml_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors == [f"{path}: expected a mapping at the top level, got ['a', 'b']"]


def test_empty_yaml_file_needs_a_searcher(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors == ["searcher: required; add it"]
    assert load_config(path, ["searcher.name=single"]).searcher.name == "single"


def test_yaml_file_validation_errors_use_config_paths(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "searcher:\n  name: random\n  metric: m\n  max_trials: 2\n  max_concurent_trials: 3\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors == [
        "searcher.max_concurent_trials: unknown key; did you mean max_concurrent_trials?"
    ]


# --- the searcher metric ------------------------------------------------------------------------


def test_a_searcher_that_compares_trials_must_name_a_metric() -> None:
    """A blank metric is no name either; ``single`` may leave it out (seed 002's first config
    has none, and every API the seeds show must work)."""
    assert errors_of({"searcher": {"name": "random", "max_trials": 2, "metric": " "}}) == [
        "searcher.metric: required by the random searcher; add metric: validation_loss"
    ]
    asha = {"name": "adaptive_asha", "max_trials": 2, "max_length": 8}
    assert errors_of({"searcher": asha}) == [
        "searcher.metric: required by the adaptive_asha searcher; add metric: validation_loss"
    ]
    assert parse_config({"searcher": {"name": "single"}}).searcher.metric is None
