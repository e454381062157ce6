"""``ExperimentConfig``: the whole experiment config, fully defaulted."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    ModelWrapValidatorHandler,
    PlainValidator,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from trialkit.config._base import ConfigModel, JsonDict, drop_nulls
from trialkit.config._errors import Issue, custom_error, raise_issues, show
from trialkit.config._hparams import normalize_hyperparameters
from trialkit.config._ignored import fold_legacy_entrypoint, ignored_warnings
from trialkit.config._length import Length, PeriodLength
from trialkit.config._searcher import SearcherConfig, fold_renamed_searcher
from trialkit.config._sections import (
    BindMount,
    Environment,
    Optimizations,
    Profiling,
    Reproducibility,
    Resources,
)
from trialkit.config._storage import CheckpointStorage, partial_storage_issues

#: Used when the config has no ``name`` (Determined marks it "eventually required").
DEFAULT_NAME = "trialkit-experiment"


def _entrypoint(value: object) -> str | list[str]:
    """A shell command string, ``module:TrialClass``, or an argv list."""
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise custom_error(
        f"expected a command string (e.g. 'python3 train.py'), model_def:TrialClass, "
        f"or a non-empty argv list of strings, got {show(value)}"
    )


#: The store keeps names in a 256-character column (PostgreSQL enforces it, SQLite does not).
MAX_NAME_LENGTH = 256


def _non_empty(value: str) -> str:
    if not value.strip():
        raise custom_error("must not be empty; give a short name, e.g. mnist-const")
    if len(value) > MAX_NAME_LENGTH:
        raise custom_error(
            f"is {len(value)} characters long; keep it to {MAX_NAME_LENGTH} "
            "(put longer text in description)"
        )
    return value


def _no_period() -> Length:
    return Length("batches", 0)


_parses = 0


def parse_count() -> int:
    """How many whole configs this process has validated: each process (CLI, master, trial)
    parses a config once and passes the typed one on, which tests check by this count."""
    return _parses


class ExperimentConfig(ConfigModel):
    """A validated experiment config; read it by attribute, send ``as_dict()`` to trials.

    A missing ``name`` becomes ``"trialkit-experiment"`` (Determined only says "eventually
    required", and seed configs such as the PyTorch porting guide's const.yaml omit it).
    """

    name: Annotated[str, AfterValidator(_non_empty)] = DEFAULT_NAME
    description: str | None = None
    labels: list[str] = []
    workspace: str = ""
    project: str = ""
    entrypoint: Annotated[str | list[str], PlainValidator(_entrypoint)] | None = None
    hyperparameters: dict[str, Any] = {}
    searcher: SearcherConfig
    resources: Resources = Field(default_factory=Resources)
    max_restarts: int = Field(default=5, ge=0)
    records_per_epoch: int = Field(default=0, ge=0)
    scheduling_unit: int = Field(default=100, ge=1)
    min_validation_period: PeriodLength = Field(default_factory=_no_period)
    min_checkpoint_period: PeriodLength = Field(default_factory=_no_period)
    perform_initial_validation: bool = False
    checkpoint_policy: Literal["best", "all", "none"] = "best"
    checkpoint_storage: CheckpointStorage | None = None
    data: JsonDict = {}
    debug: bool = False
    environment: Environment = Field(default_factory=Environment)
    bind_mounts: list[BindMount] = []
    optimizations: Optimizations = Field(default_factory=Optimizations)
    profiling: Profiling = Field(default_factory=Profiling)
    reproducibility: Reproducibility = Field(default_factory=Reproducibility)
    preemption_timeout: int | None = Field(default=None, ge=0)
    log_policies: list[JsonDict] = []
    retention_policy: JsonDict | None = None
    integrations: JsonDict | None = None
    security: JsonDict | None = None
    slurm: JsonDict | None = None
    pbs: JsonDict | None = None
    tensorboard_storage: JsonDict | None = None
    data_layer: JsonDict | None = None
    internal: JsonDict | None = None
    _warnings: list[str] = PrivateAttr(default_factory=list)
    _partial_storage: dict[str, Any] | None = PrivateAttr(default=None)

    @property
    def partial_storage(self) -> dict[str, Any] | None:
        """A ``checkpoint_storage`` block given without ``type``: the master completes it."""
        return self._partial_storage

    @property
    def warnings(self) -> list[str]:
        """One line per accepted-but-ignored key (and per folded legacy key)."""
        return list(self._warnings)

    def as_dict(self) -> dict[str, Any]:
        """The fully-defaulted config as plain JSON data (what trials get as the config)."""
        data = self.model_dump(mode="json")
        if self._partial_storage is not None and data.get("checkpoint_storage") is None:
            data["checkpoint_storage"] = dict(self._partial_storage)
        return data

    @model_validator(mode="wrap")
    @classmethod
    def _whole_config(
        cls, data: Any, handler: ModelWrapValidatorHandler[ExperimentConfig]
    ) -> ExperimentConfig:
        """Checks that span sections: legacy keys, hyperparameters vs. searcher, warnings."""
        global _parses
        if isinstance(data, ExperimentConfig):
            return handler(data)
        _parses += 1
        if not isinstance(data, dict):
            raise_issues([Issue((), f"expected a mapping at the top level, got {show(data)}")])
        data, issues, legacy = fold_legacy_entrypoint(drop_nulls(data))
        searcher = data.get("searcher")
        if isinstance(searcher, dict):
            searcher, renamed = fold_renamed_searcher(searcher)
            data, legacy = {**data, "searcher": searcher}, legacy + renamed
        grid = isinstance(searcher, dict) and searcher.get("name") == "grid"
        hparams, hp_issues = normalize_hyperparameters(data.get("hyperparameters"), grid=grid)
        data = {**data, "hyperparameters": hparams}
        issues += hp_issues
        partial = data.get("checkpoint_storage")
        if isinstance(partial, dict) and "type" not in partial:
            data = {k: v for k, v in data.items() if k != "checkpoint_storage"}
            issues += partial_storage_issues(partial)
        else:
            partial = None
        try:
            cfg = handler(data)
        except ValidationError as exc:
            raise_issues(issues, exc)
            raise
        raise_issues(issues)
        cfg._warnings = legacy + ignored_warnings(cfg)
        cfg._partial_storage = partial
        return cfg
