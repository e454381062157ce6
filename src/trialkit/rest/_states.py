"""The states the REST API reports, as its contract spells them (the store keeps its own
vocabulary; the master maps it onto these in its views). Each member is its wire string: it
compares equal to, prints and serializes as ``"COMPLETED"``."""

from __future__ import annotations

import enum
from typing import Any

#: The states after which nothing runs again, of an experiment or of a trial.
_ENDED = frozenset({"COMPLETED", "CANCELED", "ERROR"})


class _WireState(str, enum.Enum):
    """A state whose value is its name, and that prints as it (``COMPLETED``) on every Python
    version (3.10's ``str`` mixin and 3.11's format differ; ``enum.StrEnum`` is 3.11+)."""

    @staticmethod
    def _generate_next_value_(name: str, start: int, count: int, last_values: list[Any]) -> str:
        return name

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @property
    def ended(self) -> bool:
        """Whether it is over: nothing of it runs or will run again."""
        return self.value in _ENDED


class ExperimentState(_WireState):
    """An experiment's state: ACTIVE while its trials run or wait for slots; PAUSED (its
    trials checkpoint and exit; ``activate`` resumes them); STOPPING_CANCELED or
    STOPPING_ERROR while its trials are stopped after a kill or a failure; ended: COMPLETED
    (its search finished), CANCELED (killed) or ERROR (failed)."""

    ACTIVE = enum.auto()
    PAUSED = enum.auto()
    STOPPING_CANCELED = enum.auto()
    STOPPING_ERROR = enum.auto()
    COMPLETED = enum.auto()
    CANCELED = enum.auto()
    ERROR = enum.auto()


class TrialState(_WireState):
    """A trial's state: ACTIVE while it runs, waits for slots or backs off before a restart
    (what it is doing is its ``status``); PAUSED with its paused experiment; ended: COMPLETED
    (it trained its length, or the search stopped it), CANCELED (killed) or ERROR (failed past
    its restarts)."""

    ACTIVE = enum.auto()
    PAUSED = enum.auto()
    COMPLETED = enum.auto()
    CANCELED = enum.auto()
    ERROR = enum.auto()
