"""The master config file (resource pools) and the resource pool check at create."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trialkit._modeldir import pack
from trialkit.config._master import (
    MasterConfigError,
    load_master_config,
    master_config_path,
    parse_master_config,
)
from trialkit.master.search._create import CreateError, prepare_experiment

RAY_POOL = {"type": "ray", "address": "127.0.0.1:6379", "shared_paths": ["/shared"]}


def _errors(data: Any) -> list[str]:
    with pytest.raises(MasterConfigError) as caught:
        parse_master_config(data)
    return str(caught.value).splitlines()


def test_no_file_means_the_local_pool_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRIALKIT_MASTER_CONFIG", raising=False)
    assert master_config_path(tmp_path) is None
    cfg = load_master_config(None)
    assert cfg.pool_names() == ["local"] and cfg.resolve("") == "local"
    assert cfg.resolve("default") == "local"


def test_a_ray_pool_is_parsed_with_its_defaults(tmp_path: Path) -> None:
    (tmp_path / "master.yaml").write_text(
        "resource_pools:\n  gpus:\n    type: ray\n    address: ray://head:10001\n"
        "    slot_type: gpu\n    shared_paths: [/mnt/ckpt]\n"
    )
    cfg = load_master_config(master_config_path(tmp_path))
    pool = cfg.ray_pools()["gpus"]
    assert (pool.address, pool.slot_type, pool.placement_strategy) == (
        "ray://head:10001",
        "gpu",
        "PACK",
    )
    assert pool.covers("/mnt/ckpt/exp1") and not pool.covers("/mnt/ckpt2")
    assert cfg.pool_names() == ["local", "gpus"]


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (
            {"resource_pools": {"ray": {"type": "ray", "slot_type": "tpu"}}},
            "master.yaml: resource_pools.ray.slot_type: Input should be 'cpu' or 'gpu'",
        ),
        (
            {"resource_pools": {"ray": {"type": "ray", "adress": "auto"}}},
            "master.yaml: resource_pools.ray.adress: Extra inputs are not permitted",
        ),
        (
            {"resource_pools": {"k": {"type": "k8s"}}},
            "master.yaml: resource_pools.k: Input tag 'k8s' found using 'type' does not match "
            "any of the expected tags: 'local', 'ray'",
        ),
        (
            {"default_pool": "gpu"},
            "master.yaml: default_pool: 'gpu' is not a pool; use one of local",
        ),
        ([1, 2], "master.yaml: expected a mapping with resource_pools, got [1, 2]"),
        (
            {"resource_pools": {"cpu2": {"type": "local"}}},
            "master.yaml: resource_pools.cpu2: there is one local pool, named 'local'; name this "
            "one local or give it type: ray",
        ),
        (
            {
                "resource_pools": {
                    "a": {"type": "ray", "address": "h1:6379"},
                    "b": {"type": "ray", "address": "h2:6379"},
                }
            },
            "master.yaml: resource_pools: Ray pools at h1:6379, h2:6379; a master "
            "joins one Ray cluster, so every ray pool needs the same address",
        ),
    ],
)
def test_bad_master_configs_name_the_field(data: Any, line: str) -> None:
    assert _errors(data) == [line]


def test_a_file_that_is_not_yaml_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "m.yaml"
    bad.write_text("resource_pools: [\n")
    with pytest.raises(MasterConfigError) as caught:
        load_master_config(bad)
    assert str(caught.value).startswith(f"{bad}: not valid YAML")
    assert "\n" not in str(caught.value)


@pytest.fixture
def model(tmp_path: Path) -> bytes:
    d = tmp_path / "model"
    d.mkdir()
    (d / "train.py").write_text("print('hi')\n")
    return pack(d)


def _create(raw_extra: dict[str, Any], home: Path, model: bytes, pools: Any = None) -> Any:
    raw = {
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": 1},
        **raw_extra,
    }
    master = parse_master_config(pools or {"resource_pools": {"ray": RAY_POOL}})
    return prepare_experiment(raw, 2, home, model_def=model, master_config=master)


def test_an_unknown_pool_is_refused_at_create_naming_the_pools(
    tmp_path: Path, model: bytes
) -> None:
    with pytest.raises(CreateError) as caught:
        _create({"resources": {"resource_pool": "gpu-pool"}}, tmp_path / "home", model)
    assert caught.value.errors == [
        "resources.resource_pool: 'gpu-pool' is not a resource pool of this master; use one of "
        "local, ray (pools are declared in the master config, master.yaml)"
    ]


def test_the_default_pool_is_filled_in(tmp_path: Path, model: bytes) -> None:
    config, _ = _create({"resources": {"resource_pool": "default"}}, tmp_path / "home", model)
    assert config.resources.resource_pool == "local"


def test_a_ray_pool_needs_checkpoints_every_node_reaches(tmp_path: Path, model: bytes) -> None:
    home = tmp_path / "home"
    with pytest.raises(CreateError) as caught:
        _create({"resources": {"resource_pool": "ray"}}, home, model)  # default: the home
    assert caught.value.errors == [
        f"checkpoint_storage: {home}/checkpoints is not shared with every node of resource pool "
        "'ray' (its shared_paths: /shared); use a path under one of them, an object store "
        "(s3, gcs, azure), or add the path to the pool's shared_paths"
    ]
    shared = {"type": "shared_fs", "host_path": "/shared/ckpt"}
    config, _ = _create(
        {"resources": {"resource_pool": "ray"}, "checkpoint_storage": shared}, home, model
    )
    assert config.resources.resource_pool == "ray"


def test_slots_per_trial_is_not_bounded_by_local_slots_on_a_ray_pool(
    tmp_path: Path, model: bytes
) -> None:
    shared = {"type": "shared_fs", "host_path": "/shared/ckpt"}
    res = {"resource_pool": "ray", "slots_per_trial": 8}
    config, _ = _create({"resources": res, "checkpoint_storage": shared}, tmp_path / "h", model)
    assert config.resources.slots_per_trial == 8
    with pytest.raises(CreateError, match="more than this master's 2 slots"):
        _create({"resources": {"slots_per_trial": 8}}, tmp_path / "h", model)


@pytest.mark.integration
def test_master_up_refuses_a_bad_config_file_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "m.yaml"
    bad.write_text("resource_pools:\n  ray: {type: ray, slot_type: tpu}\n")
    env = {**os.environ, "TRIALKIT_HOME": str(tmp_path / "home")}
    out = subprocess.run(
        [sys.executable, "-m", "trialkit.cli", "master", "up", "--config", str(bad)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    assert out.stderr.strip().splitlines() == [
        f"trialkit: error: {bad}: resource_pools.ray.slot_type: Input should be 'cpu' or 'gpu'"
    ]
    assert not (tmp_path / "home" / "master.json").exists()


@pytest.mark.integration
@pytest.mark.parametrize("where", ["home", "--config"])
def test_a_ray_pool_nobody_answers_at_stops_the_master_with_one_line(
    tmp_path: Path, where: str
) -> None:
    pytest.importorskip("ray")
    home = tmp_path / "home"
    home.mkdir()
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = home / "master.yaml" if where == "home" else tmp_path / "pools.yaml"
    config.write_text(f"resource_pools:\n  ray: {{type: ray, address: '127.0.0.1:{port}'}}\n")
    env = {**os.environ, "TRIALKIT_HOME": str(home)}
    env.pop("TRIALKIT_MASTER_CONFIG", None)
    args = [] if where == "home" else ["--config", str(config)]
    out = subprocess.run(
        [sys.executable, "-m", "trialkit.cli", "master", "up", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    [line] = out.stderr.strip().splitlines()
    assert f"resource_pools.ray.address: nothing answers at '127.0.0.1:{port}'" in line, line
