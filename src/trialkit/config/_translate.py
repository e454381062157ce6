"""Turn pydantic's errors into one-line ``path: problem; fix`` messages.

The error's ``loc`` is walked through the model classes so the message can name the dotted path
(without pydantic's union tags), describe the expected type with its bounds, and suggest keys.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from trialkit.config._errors import (
    CUSTOM_ERROR,
    Loc,
    format_path,
    show,
    suggest,
    unknown_key_message,
)

_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
_TYPE_ERRORS = {
    "int_type",
    "int_parsing",
    "float_type",
    "bool_type",
    "string_type",
    "list_type",
    "dict_type",
    "model_type",
    "model_attributes_type",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "finite_number",
    "too_short",
    "string_too_short",
}


@dataclass
class _Spot:
    """Where a loc points: its printable path, expected annotation and bounds, owning model."""

    parts: list[str | int] = field(default_factory=list)
    annotation: Any = Any
    metadata: list[Any] = field(default_factory=list)
    owner: type[BaseModel] | None = None
    tag: str | None = None


def translate(error: Any, root: type[BaseModel]) -> str:
    """One pydantic error (a dict from ``ValidationError.errors()``) as a trialkit message."""
    spot = _locate(root, tuple(error["loc"]))
    kind, value = error["type"], error.get("input")
    path = format_path(spot.parts)
    if kind == CUSTOM_ERROR:
        return f"{path}: {error['ctx']['message']}"
    if kind == "missing":
        where = f" for {spot.tag}" if spot.tag else ""
        return f"{path}: required{where}; add it"
    if kind == "extra_forbidden":
        options = spot.owner.model_fields if spot.owner else []
        return f"{path}: {unknown_key_message(spot.parts[-1], options)}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return _tag_message(path, error, _tags(spot.annotation))
    if kind == "literal_error":
        return f"{path}: {_literal_message(spot, value)}"
    if kind in _TYPE_ERRORS:
        return f"{path}: expected {describe(spot.annotation, spot.metadata)}, got {show(value)}"
    return f"{path}: {str(error['msg']).splitlines()[0]}"


def _tag_message(path: str, error: Any, tags: list[str]) -> str:
    """A missing or unknown discriminator such as ``checkpoint_storage.type``."""
    ctx = error.get("ctx") or {}
    key = str(ctx.get("discriminator", "type")).strip("'")
    expected = ", ".join(tags)
    if error["type"] == "union_tag_not_found":
        return f"{path}.{key}: required; use one of {expected}"
    return f"{path}.{key}: unknown type {show(ctx.get('tag'))}; use one of {expected}"


def _tags(annotation: Any) -> list[str]:
    """The Literal discriminator values of a union's model members, in declaration order."""
    ann, _ = _unwrap(annotation, [])
    found: list[str] = []
    for member in get_args(ann):
        if isinstance(member, type) and issubclass(member, BaseModel):
            for info in member.model_fields.values():
                if get_origin(info.annotation) is Literal:
                    found.extend(str(a) for a in get_args(info.annotation))
    return found


def _literal_message(spot: _Spot, value: object) -> str:
    ann, _ = _unwrap(spot.annotation, [])
    options = [str(a) for a in get_args(ann)]
    guess = suggest(value, options)
    hint = f"; did you mean {guess}?" if guess else ""
    return f"expected one of {', '.join(options)}, got {show(value)}{hint}"


def _unwrap(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
    """Strip ``Annotated`` (collecting its constraints) and ``Optional``."""
    metadata = list(metadata)
    while True:
        if get_origin(annotation) is Annotated:
            annotation, *extra = get_args(annotation)
            for item in extra:
                metadata.extend(item.metadata if isinstance(item, FieldInfo) else [item])
            continue
        if _is_union(annotation):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation, metadata


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def _locate(root: type[BaseModel], loc: Loc) -> _Spot:
    """Walk ``loc`` through the model classes, skipping discriminated-union tags."""
    spot = _Spot(annotation=root)
    for part in loc:
        ann, meta = _unwrap(spot.annotation, spot.metadata)
        if isinstance(ann, type) and issubclass(ann, BaseModel) and isinstance(part, str):
            info = ann.model_fields.get(part)
            spot.owner = ann
            spot.annotation = info.annotation if info else Any
            spot.metadata = list(info.metadata) if info else []
        elif _is_union(ann) and isinstance(part, str) and _member(ann, part) is not None:
            spot.annotation, spot.metadata, spot.tag = _member(ann, part), [], part
            continue
        elif get_origin(ann) is list and isinstance(part, int):
            spot.annotation, spot.metadata = get_args(ann)[0], []
        elif get_origin(ann) is dict:
            spot.annotation, spot.metadata = get_args(ann)[1], []
        else:
            spot.annotation, spot.metadata = Any, []
        spot.parts.append(part)
    return spot


def _member(union: Any, tag: str) -> type[BaseModel] | None:
    """The union member whose ``Literal`` discriminator field equals ``tag``."""
    for member in get_args(union):
        if not (isinstance(member, type) and issubclass(member, BaseModel)):
            continue
        for info in member.model_fields.values():
            if get_origin(info.annotation) is Literal and get_args(info.annotation) == (tag,):
                return member
    return None


def describe(annotation: Any, metadata: list[Any]) -> str:
    """``an integer >= 0``, ``a list of strings``, ``one of a, b`` ... for an annotation."""
    ann, meta = _unwrap(annotation, metadata)
    origin = get_origin(ann)
    if origin is Literal:
        return "one of " + ", ".join(str(a) for a in get_args(ann))
    if origin is list:
        return f"a list of {_plural(describe(get_args(ann)[0], []))}"
    if origin is dict or (isinstance(ann, type) and issubclass(ann, BaseModel)):
        return "a mapping"
    if _is_union(ann):
        words = (describe(a, []) for a in get_args(ann) if a is not type(None))
        return " or ".join(dict.fromkeys(words))
    return _WORDS.get(ann, "a value") + _bounds(meta)


def _plural(words: str) -> str:
    """``an integer >= 1`` -> ``integers >= 1`` (for list element descriptions)."""
    for single, many in (
        ("an integer", "integers"),
        ("a string", "strings"),
        ("a number", "numbers"),
    ):
        if words.startswith(single):
            return many + words[len(single) :]
    return "values"


def _bounds(metadata: list[Any]) -> str:
    """`` >= 1``, `` between 1 and 99`` ... from annotated_types constraints."""
    lo = next((m for m in metadata if isinstance(m, (at.Ge, at.Gt))), None)
    hi = next((m for m in metadata if isinstance(m, (at.Le, at.Lt))), None)
    if isinstance(lo, at.Ge) and isinstance(hi, at.Le):
        return f" between {lo.ge} and {hi.le}"
    parts = []
    if isinstance(lo, at.Ge):
        parts.append(f">= {lo.ge}")
    elif isinstance(lo, at.Gt):
        parts.append(f"> {lo.gt}")
    if isinstance(hi, at.Le):
        parts.append(f"<= {hi.le}")
    elif isinstance(hi, at.Lt):
        parts.append(f"< {hi.lt}")
    return "".join(f" {p}" for p in parts[:1]) + "".join(f" and {p}" for p in parts[1:])
