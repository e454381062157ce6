"""Limits of what the master stores, checked by the master and early by the trial's Core API."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: The longest metric name stored: names are chart labels and searcher keys, not data (a probe
#: stored a 1,000,000-character one, which every describe then sent back).
MAX_METRIC_NAME = 256


def metric_name_error(metrics: Mapping[str, Any]) -> str | None:
    """Why one of ``metrics``' names cannot be stored (too long), or None when all can."""
    for key in metrics:
        name = key if isinstance(key, str) else str(key)  # a trial's keys become JSON strings
        if len(name) > MAX_METRIC_NAME:
            return (
                f"metric name {name[:40]!r}... is {len(name)} characters, over the "
                f"{MAX_METRIC_NAME} a metric name may have; shorten it"
            )
    return None


def metric_names_error(dicts: Iterable[Mapping[str, Any]]) -> str | None:
    """``metric_name_error`` of the first of ``dicts`` (per-batch metrics) that has one."""
    for metrics in dicts:
        error = metric_name_error(metrics)
        if error is not None:
            return error
    return None
