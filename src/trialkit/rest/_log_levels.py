"""A trial's log lines by level and rank: what ``trialkit t logs --level/--rank`` picks from.

The web UI's logs filter (``webui/trial_logs.js``: ``logLabeller``, ``logLineShown``) mirrors
these rules line for line; a change here is a change there."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

#: Python's logging levels, lowest first (WARN and FATAL read as their usual names).
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_ALIASES = {"WARN": "WARNING", "FATAL": "CRITICAL"}
# "[rank=N] || " (trialkit.launch.wrap_rank, Determined's format), then the line itself.
_RANK = re.compile(r"^\[rank=(\d+)\] \|\| ")
# A level at the start of the line: trialkit's format ("INFO: [pid] name: ...") and logging's
# default ("WARNING:root:..."), or after a timestamp ("2026-01-01 10:00:00,123 ERROR ...").
_LEVEL = re.compile(
    r"^(?:[\d-]+[ T][\d:.,]+\s+)?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b[:\s]"
)


@dataclass(frozen=True)
class LogLabel:
    """A line's rank (None without the prefix) and level (None before any line with one)."""

    rank: int | None
    level: str | None


def log_labeller() -> Callable[[str], LogLabel]:
    """A labeller of one log's lines, fed in order. A line without a level of its own (a
    traceback, a continued message) has the level of the last line of its rank that had one."""
    last: dict[int | None, str] = {}  # rank -> level of its latest line with one

    def label(line: str) -> LogLabel:
        r = _RANK.match(line)
        rank = int(r.group(1)) if r else None
        found = _LEVEL.match(line[r.end() :] if r else line)
        if found:
            last[rank] = _ALIASES.get(found.group(1), found.group(1))
            return LogLabel(rank, last[rank])
        return LogLabel(rank, last.get(rank))

    return label


def log_level_name(name: str) -> str:
    """``name`` as one of ``LEVELS`` (any case, WARN and FATAL too); ValueError otherwise."""
    level = _ALIASES.get(name.upper(), name.upper())
    if level not in LEVELS:
        raise ValueError(f"no log level {name!r}: one of {', '.join(LEVELS)}")
    return level


def log_line_shown(label: LogLabel, min_level: str | None, rank: int | None | str) -> bool:
    """Whether a labelled line passes the filters: its level at least ``min_level`` (None for
    any, and then lines without a level too) and its rank ``rank`` (``"any"``, a number, or
    None for the lines without a rank prefix)."""
    if min_level is not None and (
        label.level is None or LEVELS.index(label.level) < LEVELS.index(min_level)
    ):
        return False
    return rank == "any" or label.rank == rank
