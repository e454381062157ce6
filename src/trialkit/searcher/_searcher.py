"""The searcher: trial bookkeeping, the Shutdown rule and save/load around one strategy.

It mirrors Determined's ``Searcher`` wrapper: it counts Creates, tracks each trial's outstanding
0.37 operation, early exits (a second report is ignored) and closes, and emits ``Shutdown`` once
every requested trial has closed (``failure`` if all errored, ``cancel`` if all were canceled).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trialkit.config import Generation
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
from trialkit.searcher._rng import (
    RandomState,
    draw_request_id,
    draw_trial_seed,
    new_rng,
    restore_rng,
    rng_state,
)
from trialkit.searcher._sampling import sample_hparams
from trialkit.searcher._strategy import ProgressBook, Strategy, is_invalid

STATE_VERSION = 1


class _Source:
    """Draws Creates from the searcher RNG: sample (unless given), request id, then seed."""

    def __init__(self, hyperparameters: Mapping[str, Any], rng: RandomState) -> None:
        self.hyperparameters = hyperparameters
        self.rng = rng

    def create(self, hparams: dict[str, Any] | None = None) -> Create:
        if hparams is None:
            hparams = sample_hparams(self.hyperparameters, self.rng)
        request_id = draw_request_id(self.rng)
        return Create(request_id=request_id, trial_seed=draw_trial_seed(self.rng), hparams=hparams)


class Searcher(DrivenMethod):
    """A DrivenMethod built from one strategy; see ``make_search_method``."""

    def __init__(
        self,
        name: str,
        strategy: Strategy,
        hyperparameters: Mapping[str, Any],
        experiment_seed: int,
        generation: Generation,
    ) -> None:
        self.name = name
        self.generation = generation
        self._strategy = strategy
        self._source = _Source(hyperparameters, new_rng(experiment_seed))
        self._book = ProgressBook()
        self._issued: dict[str, None] = {}  # request ids of every Create, in order
        self._inflight: dict[str, int] = {}  # 0.37: the trial's outstanding ValidateAfter length
        self._finished: dict[str, None] = {}  # Close/Stop issued
        self._exited_early: dict[str, str] = {}
        self._closed: dict[str, None] = {}
        self._failures = 0
        self._cancels = 0
        self._started = False
        self._done = False

    # -- events -------------------------------------------------------------------------------

    def initial_operations(self) -> list[Operation]:
        if self._started:
            raise SearcherError("initial_operations() was already called for this search")
        self._started = True
        ops = self._record(self._strategy.initial(self._source))
        if not self._issued:
            ops.append(self._shutdown())
        return ops

    def on_trial_created(self, request_id: str) -> list[Operation]:
        self._require(request_id, "trial created")
        self._book.add(request_id)
        return self._record(self._strategy.created(request_id))

    def on_validation_completed(
        self, request_id: str, metrics: Mapping[str, Any], length: int | None = None
    ) -> list[Operation]:
        self._require(request_id, "validation completed")
        if self._done:
            return []
        if self.generation is Generation.REPORTS:
            if self._is_finished(request_id):
                return []  # a report after Stop or an exit changes nothing
            return self._record(self._strategy.validation(self._source, request_id, metrics))
        expected = self._complete_op(request_id, length)
        try:
            ops = self._strategy.validation(self._source, request_id, metrics)
        except SearcherError:
            self._inflight[request_id] = expected  # a rejected report changes nothing
            raise
        return self._record(ops)

    def on_trial_progress(self, request_id: str, progress: float) -> list[Operation]:
        if request_id in self._issued and request_id not in self._closed:
            try:
                value = float(progress)
            except (TypeError, ValueError):
                value = 0.0  # like NaN/Inf: a progress report that is not a number counts as 0
            self._book.update(request_id, value)
        return []

    def on_trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        self._require(request_id, "trial exited early")
        if request_id in self._exited_early or request_id in self._closed or self._done:
            return []
        reason = ExitedReason(reason)
        self._exited_early[request_id] = reason.value
        self._failures += int(reason is ExitedReason.ERRORED)
        self._cancels += int(reason is ExitedReason.USER_CANCELED)
        self._inflight.pop(request_id, None)
        if is_invalid(reason) and self._strategy.drops_invalid_progress:
            self._book.drop(request_id)
        return self._record(self._strategy.exited_early(self._source, request_id, reason))

    def on_trial_closed(self, request_id: str) -> list[Operation]:
        self._require(request_id, "trial closed")
        if request_id in self._closed:
            return []
        self._closed[request_id] = None
        self._inflight.pop(request_id, None)
        self._book.close(request_id)
        ops = self._record(self._strategy.closed(self._source, request_id))
        if not self._done and len(self._closed) == len(self._issued):
            ops.append(self._shutdown())
        return ops

    def progress(self) -> float:
        if self._done and not self._issued:
            return 1.0
        value = self._strategy.progress(self._book)
        if value != value:  # NaN
            return 0.0
        return min(max(value, 0.0), 1.0)

    def knows(self, request_id: str) -> bool:
        """Whether this search issued the Create for ``request_id``."""
        return request_id in self._issued

    def is_closed(self, request_id: str) -> bool:
        """Whether the trial's close was already delivered."""
        return request_id in self._closed

    def outstanding(self, request_id: str) -> int | None:
        """0.37: the length of the trial's ValidateAfter awaiting its metric, if any."""
        return self._inflight.get(request_id)

    def report_schedule(self, request_id: str) -> list[int]:
        """0.38 ASHA: the time-metric values at which this trial's reports decide anything."""
        return self._strategy.report_schedule(request_id)

    # -- state --------------------------------------------------------------------------------

    def save(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "searcher": self.name,
            "generation": self.generation.value,
            "rng": rng_state(self._source.rng),
            "issued": list(self._issued),
            "inflight": dict(self._inflight),
            "finished": list(self._finished),
            "exited_early": dict(self._exited_early),
            "closed": list(self._closed),
            "failures": self._failures,
            "cancels": self._cancels,
            "started": self._started,
            "done": self._done,
            "progress": self._book.state(),
            "strategy": self._strategy.state(),
        }

    def load(self, state: Mapping[str, Any]) -> None:
        expected = (STATE_VERSION, self.name, self.generation.value)
        found = (state.get("version"), state.get("searcher"), state.get("generation"))
        if found != expected:
            raise SearcherError(
                f"searcher state: got (version, searcher, generation) {found}; expected {expected}"
                " (load() needs a search method built from the same config)"
            )
        self._source.rng = restore_rng(state["rng"])
        self._issued = dict.fromkeys(state["issued"])
        self._inflight = {str(k): int(v) for k, v in state["inflight"].items()}
        self._finished = dict.fromkeys(state["finished"])
        self._exited_early = {str(k): str(v) for k, v in state["exited_early"].items()}
        self._closed = dict.fromkeys(state["closed"])
        self._failures = int(state["failures"])
        self._cancels = int(state["cancels"])
        self._started = bool(state["started"])
        self._done = bool(state["done"])
        self._book.restore(state["progress"])
        self._strategy.restore(state["strategy"])

    # -- helpers ------------------------------------------------------------------------------

    def _require(self, request_id: str, event: str) -> None:
        if request_id not in self._issued:
            raise SearcherError(f"{event}: unknown trial request_id {request_id!r}")

    def _is_finished(self, request_id: str) -> bool:
        return (
            request_id in self._finished
            or request_id in self._exited_early
            or request_id in self._closed
        )

    def _complete_op(self, request_id: str, length: int | None) -> int:
        """0.37: the completion must match the trial's outstanding ValidateAfter; return it."""
        expected = self._inflight.get(request_id)
        if expected is None:
            raise SearcherError(
                f"trial {request_id}: reported a completed operation (length {length}) but has"
                " no operation in flight (already completed?)"
            )
        if length is not None and int(length) != expected:
            raise SearcherError(
                f"trial {request_id}: expected op ValidateAfter(length={expected}) but received"
                f" a completion for length {length}"
            )
        return self._inflight.pop(request_id)

    def _record(self, ops: list[Operation]) -> list[Operation]:
        for op in ops:
            if isinstance(op, Create):
                self._issued[op.request_id] = None
            elif isinstance(op, ValidateAfter):
                self._inflight[op.request_id] = op.length
            elif isinstance(op, (Close, Stop)):
                self._finished[op.request_id] = None
            elif isinstance(op, Shutdown):
                self._done = True
        return ops

    def _shutdown(self) -> Shutdown:
        self._done = True
        requested = len(self._issued)
        return Shutdown(
            cancel=requested > 0 and self._cancels >= requested,
            failure=requested > 0 and self._failures >= requested,
        )
