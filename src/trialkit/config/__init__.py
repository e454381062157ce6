"""Determined-compatible experiment configs: parse YAML or mappings, validate, fill defaults.

``load_config("const.yaml", ["searcher.max_trials=4"])`` returns an :class:`ExperimentConfig`
or raises :class:`ConfigError` listing every problem as ``path: what is wrong; what to do``.
"""

from trialkit.config._entrypoint import (
    entrypoint_problems,
    horovod_refusal,
    horovod_trial_problems,
    horovod_trial_spec,
)
from trialkit.config._errors import ConfigError
from trialkit.config._experiment import DEFAULT_NAME, ExperimentConfig, parse_count
from trialkit.config._length import Length
from trialkit.config._load import (
    entrypoint_kind,
    load_config,
    parse_config,
    parse_searcher,
    read_config_file,
    with_defaults,
)
from trialkit.config._master import (
    LOCAL_POOL,
    MASTER_CONFIG_ENV,
    MasterConfig,
    MasterConfigError,
    RayPoolConfig,
    load_master_config,
    master_config_path,
)
from trialkit.config._searcher import Generation, SearcherConfig
from trialkit.config._sections import (
    BindMount,
    Environment,
    Optimizations,
    Profiling,
    Reproducibility,
    Resources,
)
from trialkit.config._storage import (
    AzureStorage,
    CheckpointStorage,
    DirectoryStorage,
    GCSStorage,
    S3Storage,
    SharedFSStorage,
)

__all__ = [
    "LOCAL_POOL",
    "MASTER_CONFIG_ENV",
    "MasterConfig",
    "MasterConfigError",
    "RayPoolConfig",
    "load_master_config",
    "master_config_path",
    "DEFAULT_NAME",
    "AzureStorage",
    "BindMount",
    "CheckpointStorage",
    "ConfigError",
    "Generation",
    "DirectoryStorage",
    "Environment",
    "ExperimentConfig",
    "GCSStorage",
    "Length",
    "Optimizations",
    "Profiling",
    "Reproducibility",
    "Resources",
    "S3Storage",
    "SearcherConfig",
    "SharedFSStorage",
    "entrypoint_kind",
    "entrypoint_problems",
    "horovod_refusal",
    "horovod_trial_spec",
    "horovod_trial_problems",
    "load_config",
    "read_config_file",
    "parse_config",
    "parse_count",
    "parse_searcher",
    "with_defaults",
]
