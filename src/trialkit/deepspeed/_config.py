"""``overwrite_deepspeed_config``: a DeepSpeed config file or dict with overrides merged in."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._merge import merge_into


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _load(path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ValueError(f"DeepSpeed config {path}: cannot be read ({e.strerror})") from None
    try:
        loaded = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except ValueError as e:
        raise ValueError(f"DeepSpeed config {path}: {e}") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"DeepSpeed config {path}: expected a JSON object at the top")
    return loaded


def overwrite_deepspeed_config(
    base_ds_config: str | os.PathLike[str] | Mapping[str, Any],
    source_ds_dict: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``base_ds_config`` (a JSON file, duplicate keys refused, or a dict) with
    ``source_ds_dict`` merged in recursively: overrides win, nested dicts merge. Any other
    argument type is Determined's TypeError."""
    if source_ds_dict is not None and not isinstance(source_ds_dict, Mapping):
        raise TypeError("Expected dict for source_ds_dict argument.")
    if isinstance(base_ds_config, Mapping):
        base = copy.deepcopy(dict(base_ds_config))
    elif isinstance(base_ds_config, (str, os.PathLike)):
        base = _load(base_ds_config)
    else:
        raise TypeError("Expected string or dict for base_ds_config argument.")
    return merge_into(base, source_ds_dict or {})
