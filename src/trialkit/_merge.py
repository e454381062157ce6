"""Recursive dict merge shared by the DeepSpeed config helpers (no framework imports)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def merge_into(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``overrides`` merged into ``base`` in place (nested dicts merge, other values are
    replaced by a copy), and ``base`` returned."""
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merge_into(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def merged(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict: a deep copy of ``base`` with ``overrides`` merged in."""
    return merge_into(copy.deepcopy(dict(base)), overrides)
