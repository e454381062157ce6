"""Limits on an untrusted config's shape, checked before validation, the same for CLI and REST.

A config is data from whoever can reach the master: its integers must fit the store (int64),
its floats must be finite (it is stored as strict JSON), and its size and nesting are bounded so
a hostile document cannot exhaust memory or the interpreter's stack.
"""

from __future__ import annotations

import math
from typing import Any

from trialkit.config._errors import Loc, format_path

#: Largest config file (and, measured roughly, largest config sent through the API).
MAX_CONFIG_BYTES = 1024 * 1024
#: Deepest nesting of mappings and lists (Determined configs need fewer than 10 levels).
MAX_DEPTH = 64
#: Most values (mappings, lists and scalars, aliases counted as many times as used).
MAX_VALUES = 100_000
#: Most trials a search may plan (max_trials, max_concurrent_trials, grid points): one machine's
#: master keeps them all in memory, and a grid is enumerated when the experiment starts.
MAX_TRIALS = 100_000
#: Most rungs of an ASHA search.
MAX_RUNGS = 64
#: Integers are stored as signed 64-bit numbers.
INT64_MAX = 2**63 - 1


def check_limits(raw: Any) -> list[str]:
    """Problems with ``raw``'s size, depth, integers and floats, one ``path: problem; fix`` each."""
    problems: list[str] = []
    budget = _Budget()
    # Iterative walk: a hostile depth must not hit Python's recursion limit here either.
    stack: list[tuple[Any, Loc]] = [(raw, ())]
    while stack:
        value, loc = stack.pop()
        problem = budget.take(value, loc)
        if problem is not None:
            return [*problems, problem]
        scalar = _scalar_problem(value)
        if scalar is not None:
            problems.append(f"{format_path(loc)}: {scalar}")
        elif isinstance(value, dict):
            problems.extend(
                f"{format_path((*loc, str(k)))}: {problem}"
                for k in value
                if (problem := _scalar_problem(k)) is not None
            )
            stack.extend((v, (*loc, str(k))) for k, v in reversed(value.items()))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, (*loc, i)) for i, v in reversed(list(enumerate(value))))
    return problems


class _Budget:
    """Counts values and bytes as the walk goes; says when a limit is passed."""

    def __init__(self) -> None:
        self.values = 0
        self.size = 0

    def take(self, value: Any, loc: Loc) -> str | None:
        self.values += 1
        self.size += _rough_size(value)
        if len(loc) > MAX_DEPTH:
            return (
                f"{format_path(loc[:MAX_DEPTH])}: nested more than {MAX_DEPTH} levels deep; "
                "flatten the config"
            )
        if self.values > MAX_VALUES:
            return (
                f"config: more than {MAX_VALUES} values (YAML aliases count each time they are "
                "used); shrink the config"
            )
        if self.size > MAX_CONFIG_BYTES:
            return f"config: larger than {MAX_CONFIG_BYTES // 1024} KiB; shrink the config"
        return None


def _rough_size(value: Any) -> int:
    """About how many bytes ``value`` takes as JSON, not counting its contents."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, dict):
        return 2 + sum(len(str(k)) + 4 for k in value)
    return 8


def _scalar_problem(value: Any) -> str | None:
    """Why an int or float cannot be stored, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not -INT64_MAX - 1 <= value <= INT64_MAX:
        # str() refuses more than 4300 digits: estimate those
        small = value.bit_length() < 14_000
        digits = len(str(abs(value))) if small else int(value.bit_length() * math.log10(2)) + 1
        return (
            f"integer of {'' if small else 'about '}{digits} digits is out of range; "
            f"use a value between {-INT64_MAX - 1} and {INT64_MAX}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not allowed; use a finite number"
    if isinstance(value, str) and not _is_unicode(value):
        return "has an unpaired surrogate escape (such as \\ud800); use valid Unicode text"
    return None


def _is_unicode(text: str) -> bool:
    """Whether ``text`` can be stored as UTF-8 (YAML and JSON escapes can give lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
