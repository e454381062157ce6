"""``--search-runner-config``: Determined's config for the experiment that runs the search.

trialkit runs the search in this process (``LocalSearchRunner``), not as an experiment, so of
that config only ``max_restarts`` has a meaning here (the search resumes from its searcher
directory after a failure); the fields that describe Determined's runner experiment are accepted
when they say what this process already is, and anything else is refused in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Fields that only label the runner's experiment (which does not exist here): accepted, unused.
_LABELS = ("name", "description", "labels", "notes", "hyperparameters")
_WHY = "trialkit's dsat runs the search in this process, not as an experiment"


def _refuse(field: str, detail: str) -> ValueError:
    return ValueError(f"--search-runner-config: {field}: {detail}; {_WHY} (see docs/deepspeed.md)")


def _check_entrypoint(value: Any) -> None:
    text = " ".join(value) if isinstance(value, list) else str(value)
    if "pytorch.dsat._run_dsat" not in text:
        raise _refuse("entrypoint", f"{text!r} is not dsat's own search runner")


def _check_searcher(value: Any) -> None:
    name = value.get("name") if isinstance(value, Mapping) else value
    if name != "single":
        raise _refuse("searcher.name", f"{name!r}: the search runner is a single trial")


def _check_resources(value: Any) -> None:
    if not isinstance(value, Mapping):
        raise _refuse("resources", "expected a mapping")
    for key, item in value.items():
        if key != "slots_per_trial":
            raise _refuse(f"resources.{key}", "not supported")
        if item != 0:
            raise _refuse("resources.slots_per_trial", f"{item!r}: the search runner uses no slot")


_CHECKS = {
    "entrypoint": _check_entrypoint,
    "searcher": _check_searcher,
    "resources": _check_resources,
}


def search_runner_restarts(config: Mapping[str, Any], default: int) -> int:
    """How often the search may resume after a failure (the config's ``max_restarts``, else
    ``default``); ValueError, one line naming the field, for what trialkit cannot honour."""
    for field, value in config.items():
        if field in _CHECKS:
            _CHECKS[field](value)
        elif field not in (*_LABELS, "max_restarts"):
            raise _refuse(field, "not supported")
    restarts = config.get("max_restarts", default)
    if not isinstance(restarts, int) or isinstance(restarts, bool) or restarts < 0:
        raise _refuse("max_restarts", f"{restarts!r}: expected an integer >= 0")
    return restarts
