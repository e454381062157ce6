"""What the master's REST API accepts: bounded request models and path/query types, so bad
input is a 422 naming the field instead of a failure in the store (a 500)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import pydantic_core
from fastapi import Path, Query
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, BaseModel, Field, ValidationInfo, field_validator

from ...storage import CheckpointNotFound, StorageConfigError, build, check_storage_id

#: Ids, counts and step numbers live in INTEGER columns, 32 bits wide on PostgreSQL: anything
#: larger is refused as bad input (422) instead of failing in the store (500).
MAX_INT = 2**31 - 1
#: Free-form numbers inside JSON values (checkpoint resources) stay within a signed int64.
MAX_INT64 = 2**63 - 1
#: The longest long poll a client may ask for (the routes cap the wait at 60 s anyway).
MAX_POLL_SECONDS = 86_400.0

Count = Annotated[int, Field(ge=0, le=MAX_INT)]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
ExperimentId = Annotated[int, Path(ge=1, le=MAX_INT)]
TrialId = Annotated[int, Path(ge=1, le=MAX_INT)]
PollSeconds = Annotated[float, Query(ge=0.0, le=MAX_POLL_SECONDS, allow_inf_nan=False)]
QueryCount = Annotated[int, Query(ge=0, le=MAX_INT)]
CheckpointUuid = Annotated[str, Path(min_length=1, max_length=64)]
EARLY_EXIT_REASONS = ("INVALID_HP", "USER_REQUESTED_STOP")


#: Deepest nesting accepted inside free-form JSON values (metrics, metadata, operations).
MAX_JSON_DEPTH = 64


def _plain_json(value: Any) -> Any:
    """``value`` if it can be stored and sent back: valid Unicode, nested at most 64 deep."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(item, str):
            _check_unicode(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                _check_unicode(str(key))
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return value


def _check_unicode(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            "has an unpaired surrogate escape (such as \\ud800); send valid Unicode"
        ) from None


#: Free-form JSON from a client: stored as is and sent back, so it must survive both.
JsonObject = Annotated[dict[str, Any], AfterValidator(_plain_json)]
JsonValue = Annotated[Any, AfterValidator(_plain_json)]


class CreateExperiment(BaseModel):
    config: dict[str, Any]
    model_def: str | None = None  # base64 tar.gz
    activate: bool = True
    #: The creating client's interpreter (sys.executable); trials run with it unless the
    #: config's environment.python says otherwise.
    python: str | None = None
    #: ``--warm-start PATH``: a checkpoint directory on the master's machine to start from.
    warm_start_path: str | None = None


class EncodedObject(dict[str, Any]):
    """A client's JSON object and its strict JSON text, encoded once while it was validated."""

    __slots__ = ("text",)

    def __init__(self, value: dict[str, Any], text: str) -> None:
        super().__init__(value)
        self.text = text


class EncodedList(list[dict[str, Any]]):
    """A client's list of JSON objects and its strict JSON text (see ``EncodedObject``)."""

    __slots__ = ("text",)

    def __init__(self, value: list[dict[str, Any]], text: str) -> None:
        super().__init__(value)
        self.text = text


def encode_storable(value: Any) -> str:
    """``value`` as strict JSON (NaN/Infinity as Determined's strings), refused unless it can
    be stored and sent back: valid Unicode, nested at most ``MAX_JSON_DEPTH`` deep.

    The encoding is the check: pydantic_core's encoder fails on a lone surrogate and on very
    deep values, far cheaper than walking the value (most metrics are one flat object, whose
    text holds fewer brackets than the limit, so the depth walk never runs for them)."""
    try:
        text = pydantic_core.to_json(value, inf_nan_mode="strings").decode()
    except pydantic_core.PydanticSerializationError:
        _plain_json(value)  # names what is wrong
        raise ValueError("cannot be stored as JSON; send plain JSON data") from None
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH:
        _plain_json(value)
    return text


def encoded_text(value: object) -> str | None:
    """The JSON text a validated ``EncodedObject``/``EncodedList`` carries, else None."""
    return value.text if isinstance(value, (EncodedObject, EncodedList)) else None


def _checkpoint_id(value: str) -> str:
    try:
        return check_storage_id(value)
    except CheckpointNotFound as e:
        raise ValueError(str(e)) from None


def _resource_path(value: str) -> str:
    """A file of a checkpoint: relative, inside it (no '..' part)."""
    parts = value.split("/")
    if not value or value.startswith("/") or "\\" in value or ".." in parts:
        raise ValueError(f"{value!r} must be a relative path inside the checkpoint, without '..'")
    return value


def _storage_config(value: dict[str, Any]) -> dict[str, Any]:
    try:
        build(value)
    except StorageConfigError as e:
        raise ValueError(str(e)) from None
    return value


CheckpointId = Annotated[str, Field(max_length=64), AfterValidator(_checkpoint_id)]


class CheckpointBody(BaseModel):
    uuid: CheckpointId
    run_id: Count = 0
    steps_completed: Count
    metadata: JsonObject = Field(default_factory=dict)
    resources: dict[
        Annotated[str, AfterValidator(_resource_path)], Annotated[int, Field(ge=0, le=MAX_INT64)]
    ] = Field(default_factory=dict)
    storage: Annotated[dict[str, Any], AfterValidator(_plain_json), AfterValidator(_storage_config)]


class CompletedOp(BaseModel):
    length: Count
    metric: JsonValue


class SearcherOperations(BaseModel):
    operations: list[JsonObject]
    last_event_id: Count
    #: The search's progress, a share in [0, 1].
    progress: Annotated[FiniteFloat, Field(ge=0.0, le=1.0)] | None = None


class ProgressBody(BaseModel):
    #: Before ``progress``, which is checked against it (fields validate in this order).
    is_raw: bool = False
    #: A share of the trial's training in [0, 1]; with ``is_raw``, a length (units of the
    #: searcher's operation, 0.37), which only has to be finite and not negative.
    progress: Annotated[FiniteFloat, Field(ge=0.0)]

    @field_validator("progress")
    @classmethod
    def _a_share(cls, value: float, info: ValidationInfo) -> float:
        if not info.data.get("is_raw") and value > 1.0:
            raise ValueError("a share of the trial's training, in [0, 1]")
        return value


class RunBody(BaseModel):
    run_id: Count = 0


class StatusBody(BaseModel):
    status: Annotated[str, Field(max_length=4096)] = ""


class EarlyExitBody(BaseModel):
    reason: Annotated[str, Field(pattern="^(" + "|".join(EARLY_EXIT_REASONS) + ")$")] = (
        "USER_REQUESTED_STOP"
    )


def field_errors(exc: RequestValidationError) -> list[str]:
    """One ``where.field: problem`` line per invalid input (the input itself is not echoed)."""
    return error_lines(exc.errors())


def error_lines(errors: Sequence[Any], prefix: tuple[str, ...] = ()) -> list[str]:
    """``field_errors`` of pydantic's error dicts, each location after ``prefix`` (a body
    validated outside FastAPI gets ``("body",)``, as FastAPI's own locations start)."""
    lines = []
    for err in errors:
        where = ".".join(str(part) for part in (*prefix, *err.get("loc", ()))) or "request"
        lines.append(f"{where}: {err.get('msg', 'invalid')}")
    return lines
