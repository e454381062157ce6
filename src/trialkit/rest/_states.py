"""The states the REST API reports, as its contract spells them (the store keeps its own
vocabulary; the master maps it onto these in its views). Each member is its wire string: it
compares equal to, prints and serializes as ``"COMPLETED"``."""

from __future__ import annotations

import enum


class _WireState(str, enum.Enum):
    """A state that prints as its value (``COMPLETED``), on every Python version."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class ExperimentState(_WireState):
    """An experiment's state; the STOPPING_* ones while its trials exit after a kill or error."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_ERROR = "STOPPING_ERROR"
    # ended:
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"

    @property
    def ended(self) -> bool:
        """Whether the experiment is over (nothing of it runs or will run)."""
        return self in _ENDED


class TrialState(_WireState):
    """A trial's state (what it is doing while ACTIVE is its ``status``)."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    # ended:
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"

    @property
    def ended(self) -> bool:
        """Whether the trial is over (it will not run again)."""
        return self in _ENDED


_ENDED = frozenset({"COMPLETED", "CANCELED", "ERROR"})
