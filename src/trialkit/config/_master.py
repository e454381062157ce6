"""The master config file (``$TRIALKIT_HOME/master.yaml`` or ``master up --config FILE``): the
resource pools an experiment may pick with ``resources.resource_pool``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

#: Environment variable naming the master config file (set by ``master up --config``).
MASTER_CONFIG_ENV = "TRIALKIT_MASTER_CONFIG"
MASTER_CONFIG_FILE = "master.yaml"
LOCAL_POOL = "local"
#: Names of the default pool an experiment may give (Determined's default pool is "default").
DEFAULT_POOL_NAMES = ("", "default")


class MasterConfigError(ValueError):
    """An invalid master config file: one line per problem, each naming its field path."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LocalPoolConfig(_Strict):
    """Today's slots on the master's machine (GPUs, or ``--slots`` CPU slots)."""

    type: Literal["local"] = "local"


class RayPoolConfig(_Strict):
    """An existing Ray cluster the master joins as a driver."""

    type: Literal["ray"]
    #: ``auto``, ``ray://host:port`` (Ray client) or ``host:port`` of the head's GCS.
    address: str = "auto"
    slot_type: Literal["cpu", "gpu"] = "cpu"
    #: How a multi-slot trial's bundles (one per slot) are spread over the nodes.
    placement_strategy: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] = "PACK"
    #: Directories every node sees at the same path: shared_fs checkpoint storage must be under one.
    shared_paths: list[str] = []
    #: Seconds a run's placement group may wait for the cluster before the run fails.
    placement_timeout: float = Field(default=300.0, gt=0)

    def covers(self, path: str) -> bool:
        """Whether ``path`` lies under one of the shared paths."""
        p = Path(os.path.abspath(os.path.expanduser(path)))
        return any(
            p.is_relative_to(os.path.abspath(os.path.expanduser(s))) for s in self.shared_paths
        )


PoolConfig = Annotated[LocalPoolConfig | RayPoolConfig, Field(discriminator="type")]


class MasterConfig(_Strict):
    """The master's resource pools (``local`` always exists) and the default one."""

    resource_pools: dict[str, PoolConfig] = {}
    default_pool: str = LOCAL_POOL

    @model_validator(mode="after")
    def _check_pools(self) -> MasterConfig:
        if self.default_pool not in self.pool_names():
            raise ValueError(
                f"default_pool: {self.default_pool!r} is not a pool; "
                f"use one of {', '.join(self.pool_names())}"
            )
        for name, pool in self.resource_pools.items():
            if isinstance(pool, LocalPoolConfig) and name != LOCAL_POOL:
                raise ValueError(
                    f"resource_pools.{name}: there is one local pool, named {LOCAL_POOL!r}; "
                    "name this one local or give it type: ray"
                )
        addresses = {p.address for p in self.ray_pools().values()}
        if len(addresses) > 1:
            raise ValueError(
                f"resource_pools: Ray pools at {', '.join(sorted(addresses))}; a master joins "
                "one Ray cluster, so every ray pool needs the same address"
            )
        return self

    def pools(self) -> dict[str, LocalPoolConfig | RayPoolConfig]:
        """Every pool by name, ``local`` included."""
        return {LOCAL_POOL: LocalPoolConfig(), **self.resource_pools}

    def pool_names(self) -> list[str]:
        return list(self.pools())

    def ray_pools(self) -> dict[str, RayPoolConfig]:
        return {n: p for n, p in self.pools().items() if isinstance(p, RayPoolConfig)}

    def resolve(self, name: str) -> str:
        """The pool an experiment's ``resources.resource_pool`` names (empty: the default)."""
        return self.default_pool if name in DEFAULT_POOL_NAMES else name


def _error_lines(where: str, err: ValidationError) -> list[str]:
    lines = []
    for e in err.errors():
        loc = list(e["loc"])
        if len(loc) > 2 and loc[0] == "resource_pools" and loc[2] in ("local", "ray"):
            del loc[2]  # the pool type's tag pydantic puts in the path
        path = ".".join(map(str, loc))
        msg = str(e["msg"]).removeprefix("Value error, ")
        lines.append(f"{where}: {path}: {msg}" if path else f"{where}: {msg}")
    return lines


def parse_master_config(data: Any, where: str = MASTER_CONFIG_FILE) -> MasterConfig:
    """Validate a master config mapping; MasterConfigError names every bad field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise MasterConfigError(f"{where}: expected a mapping with resource_pools, got {data!r}")
    try:
        return MasterConfig.model_validate(data)
    except ValidationError as e:
        raise MasterConfigError("\n".join(_error_lines(where, e))) from None


def load_master_config(path: Path | None) -> MasterConfig:
    """Read the master config file (``None``: no file, the local pool only)."""
    if path is None:
        return MasterConfig()
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise MasterConfigError(f"{path}: cannot read the master config ({e.strerror})") from None
    except yaml.YAMLError as e:
        raise MasterConfigError(f"{path}: not valid YAML ({e})".replace("\n", " ")) from None
    return parse_master_config(data, str(path))


def master_config_path(home: Path, given: Path | None = None) -> Path | None:
    """The config file to use: ``given``, else $TRIALKIT_MASTER_CONFIG, else the home's
    master.yaml if it exists."""
    if given is not None:
        return given
    env = os.environ.get(MASTER_CONFIG_ENV)
    if env:
        return Path(env).expanduser()
    path = home / MASTER_CONFIG_FILE
    return path if path.is_file() else None
