"""The base of every config model: strict types, no unknown keys, null means "use the default"."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, model_validator

from trialkit.config._errors import custom_error
from trialkit.config._hparams import json_problem


def drop_nulls(data: Any) -> Any:
    """Remove null-valued keys from a mapping: as in Determined, null selects the default."""
    if isinstance(data, dict):
        return {k: v for k, v in data.items() if v is not None}
    return data


class ConfigModel(BaseModel):
    """Strict (no coercion of "4" to 4), frozen, and closed to unknown keys."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        return drop_nulls(data)


def _ensure_json(value: dict[str, Any]) -> dict[str, Any]:
    problem = json_problem(value)
    if problem is not None:
        raise custom_error(f"{problem}; use plain JSON data")
    return value


#: A free-form mapping whose contents must be plain JSON data.
JsonDict = Annotated[dict[str, Any], AfterValidator(_ensure_json)]
