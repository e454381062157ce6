"""How long a trial keeps retrying a master it cannot reach: long enough for the next master of
the same home to adopt it (``trialkit master down`` says so), overridable per trial process."""

from __future__ import annotations

import os

#: The default retry window in seconds.
REPORT_RETRY_SECONDS = 300.0

#: Overrides REPORT_RETRY_SECONDS: how long a trial keeps retrying an unreachable master.
RETRY_ENV = "TRIALKIT_MASTER_RETRY_SECONDS"


def retry_window(default: float) -> float:
    """``$TRIALKIT_MASTER_RETRY_SECONDS`` when set, else ``default``."""
    raw = os.environ.get(RETRY_ENV, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError(f"{RETRY_ENV}={raw!r}: expected a number of seconds >= 0, e.g. 300")
    return value
