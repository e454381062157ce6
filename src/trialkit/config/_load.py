"""Entry points: read YAML, apply ``key=value`` overrides, validate, fill master-side defaults."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from trialkit.config._errors import ConfigError, finalize, show
from trialkit.config._experiment import ExperimentConfig
from trialkit.config._limits import MAX_CONFIG_BYTES, check_limits
from trialkit.config._searcher import SearcherConfig
from trialkit.config._storage import CheckpointStorage, complete_storage
from trialkit.config._translate import translate
from trialkit.config._yaml import YamlError, load_yaml

_TRIAL_CLASS = re.compile(r"[\w.]+:\w+")

_Section = TypeVar("_Section")
_STORAGE: TypeAdapter[CheckpointStorage] = TypeAdapter(CheckpointStorage)
_SEARCHER = TypeAdapter(SearcherConfig)

EntrypointKind = Literal["trial_class", "command", "argv", "none"]


def entrypoint_kind(entrypoint: str | list[str] | None) -> EntrypointKind:
    """How to run an entrypoint: a legacy ``module:TrialClass``, ``sh -c`` command, or argv."""
    if entrypoint is None:
        return "none"
    if isinstance(entrypoint, list):
        return "argv"
    return "trial_class" if _TRIAL_CLASS.fullmatch(entrypoint) else "command"


def parse_config(raw: Mapping[str, Any]) -> ExperimentConfig:
    """Validate ``raw`` and fill every default; ConfigError lists all problems at once."""
    try:
        return ExperimentConfig.model_validate(_checked_copy(raw))
    except ValidationError as exc:
        lines = [translate(err, ExperimentConfig) for err in exc.errors()]
        raise ConfigError(finalize(lines)) from None


def parse_searcher(raw: Mapping[str, Any]) -> SearcherConfig:
    """Validate a ``searcher`` section on its own; ConfigError names each ``searcher.*`` path."""
    return _parse_section(_SEARCHER, _checked_copy(raw), "searcher")


def _parse_section(adapter: TypeAdapter[_Section], data: Any, section: str) -> _Section:
    """Validate one top-level section alone; ConfigError names each ``section.*`` path as a
    whole-config parse would."""
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        lines = [
            translate({**err, "loc": (section, *err["loc"])}, ExperimentConfig)
            for err in exc.errors()
        ]
        raise ConfigError(finalize(lines)) from None


def _with_field(section: BaseModel, name: str, value: Any, where: str) -> Any:
    """``section`` with ``name`` set to ``value``, validated as that section."""
    data = {**section.model_dump(mode="json"), name: value}
    return _parse_section(TypeAdapter(type(section)), data, where)


def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any], overrides: Sequence[str] = ()
) -> ExperimentConfig:
    """Read a YAML file (or take a mapping), apply ``a.b=value`` overrides, then validate."""
    raw = _checked_copy(source) if isinstance(source, Mapping) else read_config_file(source)
    if raw is not None and not isinstance(raw, dict):
        where = os.fspath(source) if not isinstance(source, Mapping) else "config"
        raise ConfigError([f"{where}: expected a mapping at the top level, got {show(raw)}"])
    raw = raw or {}
    errors = [problem for item in overrides if (problem := apply_override(raw, item)) is not None]
    if errors:
        raise ConfigError(errors)
    return parse_config(raw)


def read_config_file(path: str | os.PathLike[str]) -> Any:
    """Load a YAML file; every failure becomes a ConfigError naming the file (and line)."""
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as stream:
            text = stream.read(MAX_CONFIG_BYTES + 1)
        if len(text) > MAX_CONFIG_BYTES:
            raise ConfigError(
                [
                    f"{name}: larger than {MAX_CONFIG_BYTES // 1024} KiB, the most a config may be; "
                    "shrink it"
                ]
            )
        return load_yaml(text)
    except FileNotFoundError:
        raise ConfigError([f"{name}: file not found; check the path"]) from None
    except IsADirectoryError:
        raise ConfigError([f"{name}: is a directory; give the config file"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"{name}: cannot read ({exc}); check the file"]) from None
    except YamlError as exc:
        fix = "" if ";" in exc.problem else "; fix the syntax there"  # limits say their own fix
        raise ConfigError([f"{name}: {exc.describe()}{fix}"]) from None


def apply_override(raw: dict[str, Any], override: str) -> str | None:
    """Set ``a.b.c=value`` (value parsed as YAML) in ``raw``; return an error or None."""
    key, eq, text = override.partition("=")
    label = f"override {override!r}"
    parts = key.strip().split(".")
    if not eq:
        return f"{label}: missing '='; write key=value, e.g. searcher.max_trials=4"
    if not all(p.strip() for p in parts):
        return f"{label}: empty key or key part; write key=value, e.g. searcher.max_trials=4"
    try:
        value = load_yaml(text)
    except YamlError as exc:
        return f"{label}: value is {exc.describe()}; quote or fix it"
    return _set_path(raw, [p.strip() for p in parts], value, label)


def _set_path(node: Any, parts: list[str], value: Any, label: str) -> str | None:
    """Walk (creating mappings as needed) to the parent of the last key and assign."""
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            index: Any = int(part)
        elif isinstance(node, dict):
            index = part
            if not last and node.get(part) is None:
                node[part] = {}
        else:
            where = ".".join(parts[:depth])
            return f"{label}: {where} is {show(node)}, not a mapping; set {where} as a whole"
        if last:
            node[index] = value
            return None
        node = node[index]
    return None


def with_defaults(
    cfg: ExperimentConfig,
    *,
    experiment_seed: int | None = None,
    checkpoint_storage: Mapping[str, Any] | None = None,
    python: str | None = None,
) -> ExperimentConfig:
    """A copy with the master's seed, storage and interpreter filled in where the user gave none
    (only the sections filled are validated again, never the whole config)."""
    update: dict[str, Any] = {}
    if experiment_seed is not None and cfg.reproducibility.experiment_seed is None:
        update["reproducibility"] = _with_field(
            cfg.reproducibility, "experiment_seed", experiment_seed, "reproducibility"
        )
    notes = []
    storage = None
    if checkpoint_storage is not None and cfg.partial_storage is not None:
        storage, note = complete_storage(cfg.partial_storage, _plain(checkpoint_storage))
        notes.append(note)
    elif checkpoint_storage is not None and cfg.checkpoint_storage is None:
        storage = _plain(checkpoint_storage)
    if storage is not None:
        update["checkpoint_storage"] = _parse_section(_STORAGE, storage, "checkpoint_storage")
    if python is not None and cfg.environment.python is None:
        update["environment"] = _with_field(cfg.environment, "python", python, "environment")
    filled = cfg.model_copy(update=update)
    filled._warnings = cfg.warnings + notes
    filled._partial_storage = None if storage is not None else cfg.partial_storage
    return filled


def _checked_copy(raw: Any) -> Any:
    """``_plain(raw)`` once ``raw`` is known to be within the limits (copying an alias bomb
    would take gigabytes, a deep one the whole stack)."""
    problems = check_limits(raw)
    if problems:
        raise ConfigError(problems)
    return _plain(raw)


def _plain(value: Any) -> Any:
    """A deep copy as plain dicts and lists, so validation never touches the caller's data."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
