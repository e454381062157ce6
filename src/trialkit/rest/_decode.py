"""Build the response dataclasses from decoded JSON, without pydantic (the client stays light):
fields are read by their type hints (a state string becomes its enum member); keys the model
does not know are ignored, so an older client reads a newer master's answers."""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


class ResponseError(ValueError):
    """The master's answer does not have the shape of the response model."""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """(name, required) per field of a dataclass."""
    return tuple(
        (
            f.name,
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
    )


def decode(cls: type[T], data: Any, where: str = "response") -> T:
    """``data`` (decoded JSON) as the dataclass ``cls``."""
    return _value(cls, data, where)  # type: ignore[no-any-return]


def _value(tp: Any, data: Any, where: str) -> Any:
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise ResponseError(f"{where}: expected an object, got {type(data).__name__}")
        hints = _hints(tp)
        kwargs = {}
        for name, required in _fields(tp):
            if name in data:
                kwargs[name] = _value(hints[name], data[name], f"{where}.{name}")
            elif required:
                raise ResponseError(f"{where}.{name}: missing")
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _member(tp, data, where)
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        if data is None:
            return None
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        return _value(inner, data, where)
    if origin is list:
        (item,) = typing.get_args(tp)
        if not isinstance(data, list):
            raise ResponseError(f"{where}: expected a list, got {type(data).__name__}")
        if item is Any or not dataclasses.is_dataclass(item):
            return data
        return [_value(item, d, f"{where}[{i}]") for i, d in enumerate(data)]
    if origin is dict and not isinstance(data, dict):
        raise ResponseError(f"{where}: expected an object, got {type(data).__name__}")
    return data


def _member(tp: type[enum.Enum], data: Any, where: str) -> enum.Enum:
    """``data`` as the member of ``tp`` whose value it is."""
    try:
        return tp(data)
    except ValueError:
        known = ", ".join(str(m.value) for m in tp)
        raise ResponseError(f"{where}: {data!r} is not a {tp.__name__} ({known})") from None
