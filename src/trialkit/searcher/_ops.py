"""Operations and events exchanged between a search method and the master.

Search methods are pure: they hold their own state, do no I/O, read no clock and no global RNG.
The master feeds them events and carries out the operations they return; ``save()``/``load()``
round-trip the state through JSON so a restarted master continues the same search.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Create:
    """Create a trial with these hyperparameters (and seed; custom searchers may leave it out).

    Fields in Determined 0.37's order, so ``Create(uuid.uuid4(), hparams, None)`` works; a UUID
    request id is kept as its string. ``checkpoint`` is accepted for compatibility and unused.
    """

    request_id: str
    hparams: dict[str, Any]
    checkpoint: Any = None
    trial_seed: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "request_id", str(self.request_id))


@dataclass(frozen=True)
class ValidateAfter:
    """0.37 generation: train until the trial's total reaches ``length``, then validate and report."""

    request_id: str
    length: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "request_id", str(self.request_id))
        object.__setattr__(self, "length", int(self.length))


@dataclass(frozen=True)
class Close:
    """0.37 generation: once its current operation is done, the trial is finished."""

    request_id: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "request_id", str(self.request_id))


@dataclass(frozen=True)
class Stop:
    """0.38 generation: stop a running trial early (delivered to it as a preemption signal)."""

    request_id: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "request_id", str(self.request_id))


@dataclass(frozen=True)
class Shutdown:
    """The search is over; ``failure``/``cancel`` say every trial errored / was canceled."""

    cancel: bool = False
    failure: bool = False


Operation = Create | ValidateAfter | Close | Stop | Shutdown


class ExitedReason(str, enum.Enum):
    """Why a trial ended before the searcher finished with it."""

    ERRORED = "ERRORED"
    USER_CANCELED = "USER_CANCELED"
    INVALID_HP = "INVALID_HP"
    INIT_INVALID_HP = "INIT_INVALID_HP"


class SearcherError(Exception):
    """The search cannot go on (e.g. a validation lacks the searcher metric); fails the experiment."""


class DrivenMethod(abc.ABC):
    """What the master drives: events in, operations out (built-ins, custom and optuna adapters).

    Users writing their own algorithm subclass ``trialkit.searcher.SearchMethod`` (0.37's API,
    with a SearcherState argument); an adapter turns it into a DrivenMethod.
    """

    @abc.abstractmethod
    def initial_operations(self) -> list[Operation]:
        """Operations to issue when the experiment starts."""

    @abc.abstractmethod
    def on_trial_created(self, request_id: str) -> list[Operation]:
        """The master created the trial asked for by a Create."""

    @abc.abstractmethod
    def on_validation_completed(
        self, request_id: str, metrics: Mapping[str, Any], length: int | None = None
    ) -> list[Operation]:
        """A validation result: 0.37 passes ``{metric: value}`` and the op length, 0.38 every report."""

    def on_trial_progress(self, request_id: str, progress: float) -> list[Operation]:
        """The trial reported progress (raw units in 0.37); most methods only record it."""
        return []

    @abc.abstractmethod
    def on_trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        """The trial ended before the searcher was done with it."""

    @abc.abstractmethod
    def on_trial_closed(self, request_id: str) -> list[Operation]:
        """The trial has exited for good (after early exits too)."""

    @abc.abstractmethod
    def progress(self) -> float:
        """Search progress in [0, 1]."""

    @abc.abstractmethod
    def save(self) -> dict[str, Any]:
        """The full state as JSON-serializable data."""

    @abc.abstractmethod
    def load(self, state: Mapping[str, Any]) -> None:
        """Restore the state written by ``save()``."""

    # What the master asks to repair a crash (``knows``, ``is_closed``, ``outstanding``) and to
    # let go of a search. A method that keeps no per-trial book answers "unknown" and is left
    # to its own saved state.

    def knows(self, request_id: str) -> bool:
        """Whether this search issued the Create for ``request_id`` and tracks the trial."""
        return False

    def is_closed(self, request_id: str) -> bool:
        """Whether the trial's close was already delivered (only asked for known trials)."""
        return False

    def outstanding(self, request_id: str) -> int | None:
        """0.37: the length of the trial's ValidateAfter awaiting its metric, if any."""
        return None

    def close(self) -> None:  # noqa: B027 (most methods hold nothing to release)
        """Release what the method holds (e.g. a process); the master is done with the search."""
