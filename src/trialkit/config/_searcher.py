"""``searcher``: one typed model for every search method, with each method's own key set.

Every attribute exists on every searcher (so ``cfg.searcher.divisor`` always type-checks), but a
config may only set the keys of its own method, and ``as_dict()`` shows only those keys.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from trialkit.config._base import ConfigModel, JsonDict, drop_nulls
from trialkit.config._errors import Issue, raise_issues, show, suggest, unknown_key_message
from trialkit.config._length import MAX_LENGTH, MaxLength
from trialkit.config._limits import MAX_RUNGS, MAX_TRIALS

SearcherName = Literal[
    "single", "random", "grid", "async_halving", "adaptive_asha", "custom", "optuna"
]
SEARCHERS: tuple[str, ...] = (
    "single",
    "random",
    "grid",
    "async_halving",
    "adaptive_asha",
    "custom",
    "optuna",
)
#: Old names run as their successor with a note (seed 002's ``adaptive`` search).
RENAMED = {"adaptive": "adaptive_asha"}
#: Names Determined 0.38 rejects for new experiments, with their replacement.
REMOVED = {
    "adaptive_simple": "adaptive_asha",
    "sync_halving": "async_halving",
}

_COMMON = ("name", "metric", "smaller_is_better", "source_trial_id", "source_checkpoint_uuid")
_TIME = ("time_metric", "max_time")
#: The keys each searcher accepts (Determined's searcher-*.json, plus trialkit's optuna).
FIELDS: dict[str, tuple[str, ...]] = {
    "single": (*_COMMON, "max_length"),
    "random": (*_COMMON, "max_length", "max_trials", "max_concurrent_trials"),
    "grid": (*_COMMON, "max_length", "max_concurrent_trials"),
    "async_halving": (
        *_COMMON,
        "max_length",
        "num_rungs",
        "max_trials",
        "divisor",
        *_TIME,
        "max_concurrent_trials",
        "stop_once",
    ),
    "adaptive_asha": (
        *_COMMON,
        "max_length",
        "max_trials",
        *_TIME,
        "mode",
        "divisor",
        "max_rungs",
        "bracket_rungs",
        "max_concurrent_trials",
        "stop_once",
    ),
    "custom": (*_COMMON, "unit", "max_length", "custom_searcher_class", "custom_searcher_kwargs"),
    "optuna": (
        *_COMMON,
        "max_trials",
        "max_concurrent_trials",
        "sampler",
        "sampler_kwargs",
        "pruner",
        "pruner_kwargs",
        "max_length",
        *_TIME,
    ),
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "single": (),
    "random": ("metric", "max_trials"),
    "grid": ("metric",),
    "async_halving": ("metric", "num_rungs", "max_trials"),
    "adaptive_asha": ("metric", "max_trials"),
    "custom": (),
    "optuna": ("metric", "max_trials"),
}
_NEEDS_LENGTH = ("async_halving", "adaptive_asha", "optuna")
_ASHA = ("async_halving", "adaptive_asha")
_EXAMPLES = {"metric": "metric: validation_loss", "max_trials": "max_trials: 16"}


class Generation(str, enum.Enum):
    """Which search contract an experiment uses (a ``str``: it compares and serializes as its
    version)."""

    OPS = "0.37"  # max_length: Create + ValidateAfter(target) + Close
    REPORTS = "0.38"  # time_metric/max_time: Create only; Stop; every validation report is read

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class SearcherConfig(ConfigModel):
    """The ``searcher`` section; fields that do not belong to ``name`` keep their defaults."""

    name: SearcherName
    metric: str | None = None
    smaller_is_better: bool = True
    source_trial_id: int | None = None
    source_checkpoint_uuid: str | None = None
    max_length: MaxLength | None = None
    max_trials: int | None = Field(default=None, ge=1, le=MAX_TRIALS)
    max_concurrent_trials: int = Field(default=16, ge=0, le=MAX_TRIALS)
    time_metric: str | None = None
    max_time: int | None = Field(default=None, ge=1, le=MAX_LENGTH)
    mode: Literal["standard", "aggressive", "conservative"] = "standard"
    divisor: float = Field(default=4.0, gt=1)
    max_rungs: int = Field(default=5, ge=1, le=MAX_RUNGS)
    bracket_rungs: list[Annotated[int, Field(ge=1, le=MAX_TRIALS)]] = Field(
        default=[], max_length=MAX_RUNGS
    )
    stop_once: bool = False
    num_rungs: int | None = Field(default=None, ge=1, le=MAX_RUNGS)
    unit: Literal["batches", "records", "epochs"] | None = None
    sampler: str = "TPESampler"
    sampler_kwargs: JsonDict = {}
    pruner: str = "MedianPruner"
    pruner_kwargs: JsonDict = {}
    #: trialkit: run a custom searcher inside the master, "module:Class" in the model directory
    custom_searcher_class: str | None = Field(
        default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"
    )
    custom_searcher_kwargs: JsonDict = {}

    @property
    def generation(self) -> Generation:
        """OPS (searcher operations: with max_length, and always for a custom searcher, whose
        SearchMethod API is the operations one) or REPORTS (time_metric/max_time)."""
        if self.max_length is not None or self.name == "custom":
            return Generation.OPS
        return Generation.REPORTS

    @property
    def trains_in_operations(self) -> bool:
        """Whether a trial trains to searcher operations: the OPS generation with a non-zero
        max_length (a custom searcher's operations carry their own lengths)."""
        if self.generation is not Generation.OPS:
            return False
        return self.name == "custom" or bool(self.max_length is not None and self.max_length.value)

    @property
    def max_units(self) -> int | None:
        """The length a search method trains to: max_length's number (0.37) or max_time (0.38)."""
        return self.max_length.value if self.max_length is not None else self.max_time

    @model_validator(mode="wrap")
    @classmethod
    def _check_method(
        cls, data: Any, handler: ModelWrapValidatorHandler[SearcherConfig]
    ) -> SearcherConfig:
        """Apply the per-method rules, then the field types; report both sets of problems."""
        data = drop_nulls(data)
        if not isinstance(data, dict):
            return handler(data)
        data, _ = fold_renamed_searcher(data)
        name_issue = _name_issue(data.get("name"))
        if name_issue is not None:
            raise_issues([name_issue])
        data, issues = _method_issues(data)
        try:
            result = handler(data)
        except ValidationError as exc:
            raise_issues(issues, exc)
            raise
        raise_issues(issues)
        return result

    @model_serializer(mode="wrap")
    def _only_own_keys(self, handler: Any) -> dict[str, Any]:
        """Serialize only the keys that belong to this searcher."""
        full: dict[str, Any] = handler(self)
        return {key: full[key] for key in FIELDS[self.name]}


def fold_renamed_searcher(searcher: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``searcher`` with an old name (``adaptive``) replaced by its successor, and the note."""
    name = searcher.get("name")
    if not isinstance(name, str) or name not in RENAMED:
        return searcher, []
    new = RENAMED[name]
    note = f"searcher.name: {name!r} is Determined's old name; running {new} (write name: {new})"
    return {**searcher, "name": new}, [note]


def _name_issue(name: object) -> Issue | None:
    """Why ``name`` cannot select a searcher, or None when it can."""
    valid = ", ".join(SEARCHERS)
    if name is None:
        return Issue(("name",), f"required; use one of {valid}")
    if isinstance(name, str) and name in REMOVED:
        return Issue(("name",), f"{name!r} has been removed; use {REMOVED[name]}")
    if name in SEARCHERS:
        return None
    guess = suggest(name, SEARCHERS)
    hint = f"did you mean {guess}?" if guess else f"use one of {valid}"
    return Issue(("name",), f"unknown searcher {show(name)}; {hint}")


def _method_issues(data: dict[str, Any]) -> tuple[dict[str, Any], list[Issue]]:
    """Keys foreign to the method, missing required keys, and the length contract."""
    name = data["name"]
    own = FIELDS[name]
    issues = [_foreign_key_issue(key, name) for key in data if key not in own]
    kept = {key: value for key, value in data.items() if key in own}
    for key in REQUIRED[name]:
        if key not in kept or (isinstance(kept[key], str) and not kept[key].strip()):
            example = _EXAMPLES.get(key, f"{key}: N")
            issues.append(Issue((key,), f"required by the {name} searcher; add {example}"))
    issues.extend(_length_issues(kept, name))
    return kept, issues


def _foreign_key_issue(key: str, name: str) -> Issue:
    """An unknown key, or a key that only another searcher accepts."""
    owners = [other for other, keys in FIELDS.items() if key in keys]
    if not owners:
        return Issue((key,), unknown_key_message(key, FIELDS[name]))
    guess = suggest(key, FIELDS[name])
    hint = f"did you mean {guess}?" if guess else f"remove it (used only by {', '.join(owners)})"
    return Issue((key,), f"unknown key for the {name} searcher; {hint}")


def _length_issues(data: dict[str, Any], name: str) -> list[Issue]:
    """max_length (0.37) xor time_metric + max_time (0.38); async_halving needs {unit: N}."""
    has_length = "max_length" in data
    has_metric, has_time = "time_metric" in data, "max_time" in data
    if has_length and (has_metric or has_time):
        msg = (
            "cannot be combined with time_metric/max_time: max_length is the 0.37 length "
            "contract, time_metric + max_time the 0.38 one; keep one of them"
        )
        return [Issue(("max_length",), msg)]
    if has_metric != has_time:
        missing, given = ("max_time", "time_metric") if has_metric else ("time_metric", "max_time")
        msg = (
            f"required together with {given} (0.38 generation); add {missing}, "
            f"or replace {given} with max_length (0.37 generation)"
        )
        return [Issue((missing,), msg)]
    if name in _NEEDS_LENGTH and not (has_length or has_metric):
        msg = (
            f"{name} needs a training length; give time_metric + max_time (0.38 generation) "
            "or max_length (0.37 generation)"
        )
        return [Issue((), msg)]
    if name == "async_halving" and _is_bare_int(data.get("max_length")):
        value = data["max_length"]
        msg = f"async_halving needs {{batches|records|epochs: N}}, got {value}; write {{batches: {value}}}"
        return [Issue(("max_length",), msg)]
    if name in _ASHA and _is_bare_int(data.get("max_length")) and data["max_length"] < 1:
        msg = f"{name} needs a length >= 1, got {data['max_length']}; give the top rung's length"
        return [Issue(("max_length",), msg)]
    return []


def _is_bare_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
