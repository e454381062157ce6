"""Hyperparameter specs: validate them and normalize every leaf to a dict with all its fields."""

from __future__ import annotations

import math
from typing import Any

from trialkit.config._errors import Issue, Loc, show, suggest, unknown_key_message
from trialkit.config._limits import MAX_TRIALS

HP_TYPES = ("const", "int", "double", "log", "categorical")
_REQUIRED = object()

#: Fields of each leaf type, in output order, with their defaults (_REQUIRED: must be given).
_LEAF_FIELDS: dict[str, dict[str, Any]] = {
    "const": {"val": _REQUIRED},
    "int": {"minval": _REQUIRED, "maxval": _REQUIRED, "count": None},
    "double": {"minval": _REQUIRED, "maxval": _REQUIRED, "count": None},
    "log": {"minval": _REQUIRED, "maxval": _REQUIRED, "base": 10.0, "count": None},
    "categorical": {"vals": _REQUIRED},
}
_RANGED = ("int", "double", "log")


def normalize_hyperparameters(raw: object, *, grid: bool) -> tuple[dict[str, Any], list[Issue]]:
    """Validate ``hyperparameters``; return the normalized tree and every problem found."""
    issues: list[Issue] = []
    if raw is None:
        return {}, issues
    if not isinstance(raw, dict):
        msg = f"expected a mapping of name -> hyperparameter, got {show(raw)}"
        return {}, [Issue(("hyperparameters",), msg)]
    tree = _group(raw, ("hyperparameters",), issues)
    if grid:
        issues.extend(grid_count_issues(tree, ("hyperparameters",)))
        if not issues and _grid_size(tree) > MAX_TRIALS:
            msg = (
                f"the grid has more than {MAX_TRIALS} points; lower the counts or use fewer values"
            )
            issues.append(Issue(("hyperparameters",), msg))
    return tree, issues


def _grid_size(tree: dict[str, Any]) -> int:
    """Points of the grid over ``tree`` (valid leaves), counted up to just past MAX_TRIALS."""
    size = 1
    for node in tree.values():
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        if kind == "categorical":
            size *= len(node.get("vals") or [1])
        elif kind == "int":
            size *= max(1, min(int(node["count"]), int(node["maxval"]) - int(node["minval"]) + 1))
        elif kind in _RANGED:
            size *= int(node["count"])
        elif "type" not in node:
            size *= _grid_size(node)
        if size > MAX_TRIALS:
            return size
    return size


def _group(raw: dict[Any, Any], loc: Loc, issues: list[Issue]) -> dict[str, Any]:
    """A nested group: every value is a leaf or another group (keys become strings, sorted)."""
    out: dict[str, Any] = {}
    for key in sorted(raw, key=str):
        out[str(key)] = _node(raw[key], (*loc, str(key)), issues)
    return out


def _node(value: object, loc: Loc, issues: list[Issue]) -> Any:
    """One hyperparameter: a typed leaf, a nested group, or a bare value (const shorthand)."""
    if not isinstance(value, dict):
        issues.extend(_json_issues(value, loc))
        return {"type": "const", "val": value}
    if "type" not in value:
        return _group(value, loc, issues)
    return _leaf(value, loc, issues)


def _leaf(spec: dict[Any, Any], loc: Loc, issues: list[Issue]) -> dict[str, Any]:
    """A ``{type: ..., ...}`` leaf with every field present."""
    kind = spec["type"]
    if kind not in _LEAF_FIELDS:
        issues.append(Issue((*loc, "type"), _unknown_type(kind)))
        return dict(spec)
    fields = _LEAF_FIELDS[kind]
    out: dict[str, Any] = {"type": kind}
    for key in spec:
        if key != "type" and key not in fields:
            issues.append(Issue((*loc, str(key)), unknown_key_message(key, ["type", *fields])))
    for name, default in fields.items():
        if name in spec:
            out[name] = spec[name]
        elif default is _REQUIRED:
            issues.append(Issue((*loc, name), f"required for a {kind} hyperparameter; add it"))
        else:
            out[name] = default
    issues.extend(_CHECKS[kind](out, loc))
    return out


def _unknown_type(kind: object) -> str:
    msg = f"unknown type {show(kind)}; expected one of {', '.join(HP_TYPES)}"
    guess = suggest(kind, HP_TYPES)
    return f"{msg} (did you mean {guess}?)" if guess else msg


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_const(leaf: dict[str, Any], loc: Loc) -> list[Issue]:
    return _json_issues(leaf.get("val"), (*loc, "val")) if "val" in leaf else []


def _check_categorical(leaf: dict[str, Any], loc: Loc) -> list[Issue]:
    if "vals" not in leaf:
        return []
    vals = leaf["vals"]
    if not isinstance(vals, list) or not vals:
        return [Issue((*loc, "vals"), f"expected a non-empty list of values, got {show(vals)}")]
    return _json_issues(vals, (*loc, "vals"))


def _check_range(leaf: dict[str, Any], loc: Loc, *, integer: bool) -> list[Issue]:
    """minval/maxval have the right type and minval < maxval; count is an int >= 1."""
    issues: list[Issue] = []
    is_ok = _is_int if integer else _is_number
    what = "an integer" if integer else "a number"
    for name in ("minval", "maxval"):
        if name in leaf and not is_ok(leaf[name]):
            issues.append(Issue((*loc, name), f"expected {what}, got {show(leaf[name])}"))
    lo, hi = leaf.get("minval"), leaf.get("maxval")
    if not issues and lo is not None and hi is not None and not lo < hi:
        msg = f"must be greater than minval ({lo}), got {hi}; swap or widen the range"
        issues.append(Issue((*loc, "maxval"), msg))
    count = leaf.get("count")
    if count is not None and (not _is_int(count) or count < 1):
        issues.append(Issue((*loc, "count"), f"expected an integer >= 1, got {show(count)}"))
    elif count is not None and count > MAX_TRIALS:
        msg = f"{count} grid points is more than the {MAX_TRIALS} a search may have; lower it"
        issues.append(Issue((*loc, "count"), msg))
    return issues


def _check_int(leaf: dict[str, Any], loc: Loc) -> list[Issue]:
    return _check_range(leaf, loc, integer=True)


def _check_double(leaf: dict[str, Any], loc: Loc) -> list[Issue]:
    return _check_range(leaf, loc, integer=False)


def _check_log(leaf: dict[str, Any], loc: Loc) -> list[Issue]:
    issues = _check_range(leaf, loc, integer=False)
    base = leaf["base"]
    if not _is_number(base) or not base > 0 or not math.isfinite(base):
        issues.append(Issue((*loc, "base"), f"expected a number > 0, got {show(base)}"))
    else:
        leaf["base"] = float(base)
    return issues


_CHECKS = {
    "const": _check_const,
    "int": _check_int,
    "double": _check_double,
    "log": _check_log,
    "categorical": _check_categorical,
}


def grid_count_issues(tree: dict[str, Any], loc: Loc) -> list[Issue]:
    """Every int/double/log leaf (nested too) needs ``count`` under the grid searcher."""
    issues: list[Issue] = []
    for name, node in tree.items():
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        if kind in _RANGED and node.get("count") is None:
            msg = "required by the grid searcher; add count: N (grid points on this axis)"
            issues.append(Issue((*loc, name, "count"), msg))
        elif "type" not in node:
            issues.extend(grid_count_issues(node, (*loc, name)))
    return issues


def _json_issues(value: object, loc: Loc) -> list[Issue]:
    """Values must be plain JSON data: trials receive them as JSON."""
    problem = json_problem(value)
    if problem is None:
        return []
    return [Issue(loc, f"{problem}; use strings, numbers, booleans, null, lists and mappings")]


def json_problem(value: object) -> str | None:
    if value is None or isinstance(value, (bool, int, float, str)):
        return None
    if isinstance(value, list):
        return next((p for p in map(json_problem, value) if p is not None), None)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return f"mapping keys must be strings, got {show(list(value))}"
        return next((p for p in map(json_problem, value.values()) if p is not None), None)
    return f"{type(value).__name__} value {show(value)} is not JSON data"
