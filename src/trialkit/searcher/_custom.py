"""Custom searchers: Determined 0.37's ``SearchMethod`` API, and the adapters the master drives.

A user subclasses ``SearchMethod``; every event handler receives the runner-kept
``SearcherState`` and returns operations (``Create``, ``ValidateAfter``, ``Close``,
``Shutdown``). Two ways to run one (``searcher.name: custom``):

* by the master: ``searcher.custom_searcher_class: module:Class`` names a class in the
  model directory (``custom_searcher_kwargs`` are passed to its constructor); ``CustomMethod``
  adapts it in a process of its own that the master drives (``master.search._custom_process``),
  and its state (SearcherState plus the files ``save_method_state`` writes) is saved with the
  experiment after every event, so a master restart continues the same search;
* in the user's own process: without ``custom_searcher_class`` the master keeps the events in a
  queue (``EventQueueMethod``) and ``LocalSearchRunner`` (``_runner.py``) polls them over the REST
  API, calls the method and posts its operations back.
"""

from __future__ import annotations

import abc
import base64
import dataclasses
import logging
import math
import pathlib
import tempfile
import uuid
from collections.abc import Mapping
from typing import Any

from trialkit.searcher._ops import (
    Close,
    Create,
    DrivenMethod,
    ExitedReason,
    Operation,
    SearcherError,
    Shutdown,
    Stop,
    ValidateAfter,
)
from trialkit.searcher._rng import draw_trial_seed, new_rng, restore_rng, rng_state

_OPS = (Create, ValidateAfter, Close, Shutdown, Stop)

logger = logging.getLogger("trialkit.searcher")


@dataclasses.dataclass
class SearcherState:
    """What the runner knows about the search; read it, never modify it (as in Determined).

    Attributes: failures (trials that exited early), trial_progress (0..1 per trial),
    trials_closed, trials_created, last_event_id, experiment_completed.
    """

    failures: set[uuid.UUID] = dataclasses.field(default_factory=set)
    trial_progress: dict[uuid.UUID, float] = dataclasses.field(default_factory=dict)
    trials_closed: set[uuid.UUID] = dataclasses.field(default_factory=set)
    trials_created: set[uuid.UUID] = dataclasses.field(default_factory=set)
    last_event_id: int = 0
    experiment_completed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable form (Determined's key names)."""
        return {
            "failures": sorted(str(f) for f in self.failures),
            "trialProgress": {str(k): v for k, v in self.trial_progress.items()},
            "trialsClosed": sorted(str(t) for t in self.trials_closed),
            "trialsCreated": sorted(str(t) for t in self.trials_created),
            "lastEventId": self.last_event_id,
            "experimentCompleted": self.experiment_completed,
        }

    def from_dict(self, d: Mapping[str, Any]) -> None:
        """Inverse of ``to_dict()``."""
        self.failures = {uuid.UUID(f) for f in d.get("failures", [])}
        self.trial_progress = {
            uuid.UUID(k): float(v) for k, v in d.get("trialProgress", {}).items()
        }
        self.trials_closed = {uuid.UUID(t) for t in d.get("trialsClosed", [])}
        self.trials_created = {uuid.UUID(t) for t in d.get("trialsCreated", [])}
        self.last_event_id = int(d.get("lastEventId", 0))
        self.experiment_completed = bool(d.get("experimentCompleted", False))


class SearchMethod(abc.ABC):
    """A custom hyperparameter search (Determined 0.37's ``determined.searcher.SearchMethod``).

    Each handler but ``progress`` returns the operations to carry out. Request ids are UUIDs.
    Override ``save_method_state``/``load_method_state`` to keep your own state across restarts.
    """

    @abc.abstractmethod
    def initial_operations(self, searcher_state: SearcherState) -> list[Operation]:
        """Operations at experiment start (usually Creates and their first ValidateAfter)."""

    @abc.abstractmethod
    def on_trial_created(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        """The trial asked for by a Create exists."""

    @abc.abstractmethod
    def on_validation_completed(
        self, searcher_state: SearcherState, request_id: uuid.UUID, metric: Any, train_length: int
    ) -> list[Operation]:
        """The trial trained to ``train_length`` and reported ``metric`` (op.report_completed)."""

    @abc.abstractmethod
    def on_trial_closed(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        """The trial has exited for good."""

    @abc.abstractmethod
    def progress(self, searcher_state: SearcherState) -> float:
        """Search progress in [0, 1]."""

    @abc.abstractmethod
    def on_trial_exited_early(
        self, searcher_state: SearcherState, request_id: uuid.UUID, exited_reason: ExitedReason
    ) -> list[Operation]:
        """The trial ended before the search was done with it."""

    def save_method_state(self, path: pathlib.Path) -> None:  # noqa: B027
        """Write the method's own state into the directory ``path``."""

    def load_method_state(self, path: pathlib.Path) -> None:  # noqa: B027
        """Read what ``save_method_state`` wrote."""


def check_operations(ops: Any, where: str) -> list[Operation]:
    """The handler's return value as a list of operations, else a SearcherError saying what."""
    if ops is None:
        return []
    if not isinstance(ops, (list, tuple)):
        raise SearcherError(f"{where} returned {ops!r}; expected a list of operations")
    for op in ops:
        if not isinstance(op, _OPS):
            raise SearcherError(
                f"{where} returned {op!r}; expected trialkit.searcher Create, ValidateAfter,"
                " Close, Stop or Shutdown"
            )
    return list(ops)


def _uuid(request_id: str, where: str) -> uuid.UUID:
    try:
        return uuid.UUID(request_id)
    except ValueError:
        raise SearcherError(f"{where}: request_id {request_id!r} is not a UUID") from None


def save_files(method: SearchMethod) -> dict[str, str]:
    """Run ``save_method_state`` into a fresh directory; return its files, base64-encoded."""
    with tempfile.TemporaryDirectory(prefix="trialkit-searcher-") as tmp:
        root = pathlib.Path(tmp)
        method.save_method_state(root)
        return {
            str(p.relative_to(root)): base64.b64encode(p.read_bytes()).decode()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }


def load_files(method: SearchMethod, files: Mapping[str, str]) -> None:
    """Write saved files into a fresh directory and run ``load_method_state`` on it."""
    with tempfile.TemporaryDirectory(prefix="trialkit-searcher-") as tmp:
        root = pathlib.Path(tmp)
        for rel, data in files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(data))
        method.load_method_state(root)


class CustomMethod(DrivenMethod):
    """Runs a user ``SearchMethod`` (in the searcher's own process); keeps its SearcherState.

    The metric handed to ``on_validation_completed`` is the value of ``metric`` in the report
    (0.37: what the trial passed to ``op.report_completed``). Creates without a ``trial_seed``
    get one drawn from an RNG seeded with the experiment seed. Errors raised by user code become
    SearcherErrors, which fail the experiment with the method's name and the exception.
    """

    def __init__(self, method: SearchMethod, experiment_seed: int, metric: str) -> None:
        self.method = method
        self.metric = metric
        self.state = SearcherState()
        self._rng = new_rng(experiment_seed)
        self._inflight: dict[str, int] = {}
        self._progress_warned = False

    def _call(self, name: str, *args: Any) -> list[Operation]:
        where = f"{type(self.method).__name__}.{name}"
        try:
            ops = getattr(self.method, name)(self.state, *args)
        except SearcherError:
            raise
        except Exception as e:
            raise SearcherError(f"custom searcher {where} raised {type(e).__name__}: {e}") from e
        ops = check_operations(ops, where)
        out: list[Operation] = []
        for op in ops:
            if isinstance(op, Create) and op.trial_seed is None:
                op = dataclasses.replace(op, trial_seed=draw_trial_seed(self._rng))
            if isinstance(op, ValidateAfter):
                self._inflight[op.request_id] = op.length
            if isinstance(op, Shutdown):
                self.state.experiment_completed = True
            out.append(op)
        return out

    def initial_operations(self) -> list[Operation]:
        return self._call("initial_operations")

    def on_trial_created(self, request_id: str) -> list[Operation]:
        rid = _uuid(request_id, "trial created")
        self.state.trials_created.add(rid)
        self.state.trial_progress.setdefault(rid, 0.0)
        return self._call("on_trial_created", rid)

    def on_validation_completed(
        self, request_id: str, metrics: Mapping[str, Any], length: int | None = None
    ) -> list[Operation]:
        rid = _uuid(request_id, "validation completed")
        metric = metrics.get(self.metric) if isinstance(metrics, Mapping) else metrics
        if length is None:
            length = self._inflight.get(request_id, 0)
        self._inflight.pop(request_id, None)
        self.state.trial_progress[rid] = 1.0
        return self._call("on_validation_completed", rid, metric, int(length))

    def on_trial_progress(self, request_id: str, progress: float) -> list[Operation]:
        rid = _uuid(request_id, "trial progress")
        length = self._inflight.get(request_id)
        if length and math.isfinite(progress):
            self.state.trial_progress[rid] = min(max(progress / length, 0.0), 1.0)
        return []

    def on_trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        rid = _uuid(request_id, "trial exited early")
        self.state.failures.add(rid)
        self._inflight.pop(request_id, None)
        return self._call("on_trial_exited_early", rid, ExitedReason(reason))

    def on_trial_closed(self, request_id: str) -> list[Operation]:
        rid = _uuid(request_id, "trial closed")
        self.state.trials_closed.add(rid)
        self._inflight.pop(request_id, None)
        return self._call("on_trial_closed", rid)

    def progress(self) -> float:
        try:
            value = float(self.method.progress(self.state))
        except Exception as e:  # progress is for display: say so once, never fail the search
            if not self._progress_warned:
                self._progress_warned = True
                logger.warning(
                    "%s.progress() raised %s: %s; showing 0%% progress",
                    type(self.method).__name__,
                    type(e).__name__,
                    e,
                )
            return 0.0
        return min(max(value, 0.0), 1.0) if math.isfinite(value) else 0.0

    def save(self) -> dict[str, Any]:
        return {
            "kind": "custom",
            "searcher_state": self.state.to_dict(),
            "rng": rng_state(self._rng),
            "inflight": dict(self._inflight),
            "method_files": save_files(self.method),
        }

    def load(self, state: Mapping[str, Any]) -> None:
        if state.get("kind") != "custom":
            raise SearcherError("searcher state: not a custom searcher's state")
        self.state = SearcherState()
        self.state.from_dict(state["searcher_state"])
        self._rng = restore_rng(state["rng"])
        self._inflight = {str(k): int(v) for k, v in state["inflight"].items()}
        load_files(self.method, state["method_files"])


class EventQueueMethod(DrivenMethod):
    """The master's side of a custom searcher run in the user's process: events are queued for
    the runner to poll; its operations arrive with ``acknowledge`` (``/searcher/operations``).

    Event ids start at 1 and increase; events the runner acknowledged are dropped from the
    saved state. A post for events already acknowledged is ignored (a runner that restarts
    before saving its own state may send them again).
    """

    def __init__(self, metric: str, experiment_seed: int) -> None:
        self.metric = metric
        self._rng = new_rng(experiment_seed)
        self.events: list[dict[str, Any]] = []
        self.next_id = 1
        self.acked = 0
        self.reported_progress = 0.0
        self.trial_progress: dict[str, float] = {}
        self._inflight: dict[str, int] = {}

    def _event(self, kind: str, **fields: Any) -> list[Operation]:
        self.events.append({"id": self.next_id, "kind": kind, **fields})
        self.next_id += 1
        return []

    def initial_operations(self) -> list[Operation]:
        return self._event("initial_operations")

    def on_trial_created(self, request_id: str) -> list[Operation]:
        self.trial_progress.setdefault(request_id, 0.0)
        return self._event("trial_created", request_id=request_id)

    def on_validation_completed(
        self, request_id: str, metrics: Mapping[str, Any], length: int | None = None
    ) -> list[Operation]:
        metric = metrics.get(self.metric) if isinstance(metrics, Mapping) else metrics
        if length is None:
            length = self._inflight.get(request_id, 0)
        self._inflight.pop(request_id, None)
        self.trial_progress[request_id] = 1.0
        return self._event(
            "validation_completed", request_id=request_id, metric=metric, length=int(length)
        )

    def on_trial_progress(self, request_id: str, progress: float) -> list[Operation]:
        length = self._inflight.get(request_id)
        if length and math.isfinite(progress):
            self.trial_progress[request_id] = min(max(progress / length, 0.0), 1.0)
        return []

    def on_trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        self._inflight.pop(request_id, None)
        return self._event(
            "trial_exited_early", request_id=request_id, reason=ExitedReason(reason).value
        )

    def on_trial_closed(self, request_id: str) -> list[Operation]:
        self._inflight.pop(request_id, None)
        return self._event("trial_closed", request_id=request_id)

    def progress(self) -> float:
        return self.reported_progress

    def events_after(self, after: int) -> list[dict[str, Any]]:
        """Events with an id above ``after``, oldest first."""
        return [e for e in self.events if e["id"] > after]

    def acknowledge(self, last_event_id: int, progress: float | None) -> bool:
        """The runner handled events up to ``last_event_id``; False if that was already known."""
        if last_event_id <= self.acked:
            return False
        if last_event_id >= self.next_id:
            raise SearcherError(
                f"searcher operations for event {last_event_id}, but the latest event is"
                f" {self.next_id - 1}"
            )
        self.acked = last_event_id
        self.events = [e for e in self.events if e["id"] > last_event_id]
        if progress is not None and math.isfinite(progress):
            self.reported_progress = min(max(float(progress), 0.0), 1.0)
        return True

    def record(self, ops: list[Operation]) -> list[Operation]:
        """The runner's operations, Creates given a seed; ValidateAfter lengths are tracked."""
        out: list[Operation] = []
        for op in ops:
            if isinstance(op, Create) and op.trial_seed is None:
                op = dataclasses.replace(op, trial_seed=draw_trial_seed(self._rng))
            if isinstance(op, ValidateAfter):
                self._inflight[op.request_id] = op.length
            out.append(op)
        return out

    def save(self) -> dict[str, Any]:
        return {
            "kind": "remote",
            "rng": rng_state(self._rng),
            "events": self.events,
            "next_id": self.next_id,
            "acked": self.acked,
            "progress": self.reported_progress,
            "trial_progress": dict(self.trial_progress),
            "inflight": dict(self._inflight),
        }

    def load(self, state: Mapping[str, Any]) -> None:
        if state.get("kind") != "remote":
            raise SearcherError("searcher state: not a remote custom searcher's state")
        self._rng = restore_rng(state["rng"])
        self.events = [dict(e) for e in state["events"]]
        self.next_id = int(state["next_id"])
        self.acked = int(state["acked"])
        self.reported_progress = float(state["progress"])
        self.trial_progress = {str(k): float(v) for k, v in state["trial_progress"].items()}
        self._inflight = {str(k): int(v) for k, v in state["inflight"].items()}


def encode_operation(op: Operation) -> dict[str, Any]:
    """An operation as JSON (the REST API's and the saved state's form)."""
    fields = {k: v for k, v in dataclasses.asdict(op).items() if k != "checkpoint"}
    return {"kind": type(op).__name__, **fields}


def decode_operation(d: Mapping[str, Any]) -> Operation:
    """Inverse of ``encode_operation``; a SearcherError for anything else."""
    kinds: dict[str, type[Any]] = {c.__name__: c for c in _OPS}
    kind = d.get("kind") if isinstance(d, Mapping) else None
    if kind not in kinds:
        raise SearcherError(f"unknown searcher operation {d!r}")
    fields = {k: v for k, v in d.items() if k != "kind"}
    try:
        return kinds[kind](**fields)  # type: ignore[no-any-return]
    except TypeError as e:
        raise SearcherError(f"searcher operation {d!r}: {e}") from None
