"""JSON-safe values, shared by the client (requests) and the store (JSON columns)."""

from __future__ import annotations

import json
import math
from typing import Any

_PLAIN = frozenset({str, int, bool, type(None)})


def _non_finite(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def to_jsonable(value: Any) -> Any:
    """Plain JSON data: numpy scalars/arrays unwrapped, NaN/Inf as the strings Determined uses."""
    t = type(value)
    if t is float:  # exact-type fast paths first: this runs for every reported metric
        return value if value - value == 0.0 else _non_finite(value)
    if t in _PLAIN:
        return value
    if t is dict:
        return {k if type(k) is str else str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, float):
        return to_jsonable(float(value))
    if isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) in ((), None):
        return to_jsonable(item())
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return to_jsonable(tolist())
    raise TypeError(f"cannot report {type(value).__name__} value {value!r}: not JSON-serializable")


# Built once: json.dumps with any keyword builds a new encoder per call, which cost more than
# the encoding itself for the small dicts of a metric report.
_encode = json.JSONEncoder(allow_nan=False).encode


def dumps(value: Any) -> str:
    """Strict JSON: non-finite floats become Determined's "NaN"/"Infinity" strings, which every
    database's JSON type accepts (PostgreSQL rejects a bare NaN)."""
    try:
        return _encode(value)
    except (ValueError, TypeError):
        return _encode(to_jsonable(value))
