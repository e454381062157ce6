"""The searcher router: each managed experiment's SearcherDriver, and every call into it.

A SearcherError never escapes: the call returns its message, and the engine fails the
experiment with it (``ExperimentEvent.FAILED``). A custom searcher's process answers later, on
its experiment's own thread (``_driver.OffLock``): its message, or None, goes to ``answered``
then, under the engine's lock, and the call itself returns None."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ...searcher import ExitedReason, SearcherError
from ...store import Experiment, Store, Trial, TrialState
from ._driver import OffLock, SearcherDriver
from ._experiment_config import config_of

logger = logging.getLogger("trialkit.master")

_EXIT_REASONS = {
    TrialState.ERROR: ExitedReason.ERRORED,
    TrialState.CANCELED: ExitedReason.USER_CANCELED,
}


class SearcherRouter:
    """Experiment id -> its driver (loaded on first use, dropped when the experiment ends).

    With ``lock`` and ``answered``, custom searchers' processes are called off that lock, and
    ``answered(experiment_id, error)`` is told each of their answers under it."""

    def __init__(
        self,
        store: Store,
        lock: AbstractContextManager[Any] | None = None,
        answered: Callable[[int, str | None], None] | None = None,
    ) -> None:
        self.store = store
        self._drivers: dict[int, SearcherDriver] = {}
        self._off_lock = (
            OffLock(lock, self._answered_later) if lock is not None and answered else None
        )
        self._answered = answered

    def driver(self, experiment_id: int) -> SearcherDriver | None:
        return self._drivers.get(experiment_id)

    def generation(self, exp: Experiment) -> str:
        drv = self._drivers.get(exp.id)
        return drv.generation if drv is not None else config_of(exp).searcher.generation

    def forget(self, experiment_id: int) -> None:
        drv = self._drivers.pop(experiment_id, None)
        if drv is not None:
            drv.close()

    def close(self) -> list[SearcherDriver]:
        """Release every search's resources (custom searcher processes): the master stops. The
        drivers let go, to ``join`` once the engine's lock is released."""
        drivers = list(self._drivers.values())
        for experiment_id in list(self._drivers):
            self.forget(experiment_id)
        return drivers

    def load(self, exp: Experiment) -> str | None:
        """Load (or start) the experiment's search; the searcher error, if any."""
        return self._guard(exp, lambda: self._load(exp))

    def _load(self, exp: Experiment) -> SearcherDriver:
        drv = self._drivers.get(exp.id)
        if drv is None:
            drv = SearcherDriver(self.store, exp, self._off_lock)
            self._drivers[exp.id] = drv
        return drv

    def call(
        self,
        exp: Experiment,
        action: Callable[[SearcherDriver], object],
        trial: Trial | None = None,
        *,
        load: bool = False,
    ) -> str | None:
        """Run ``action`` with the experiment's driver (loading it first with ``load``; else
        nothing happens without one); the searcher error, if any."""
        drv = self._drivers.get(exp.id)
        if drv is None and not load:
            return None
        return self._guard(exp, lambda: action(drv or self._load(exp)), trial)

    def trial_ended(self, exp: Experiment, trial: Trial) -> str | None:
        """Tell the search that a trial ended: how, when it ended early, and that it closed."""
        reason = _EXIT_REASONS.get(trial.state)
        if trial.searcher.early_exit == "INVALID_HP":
            reason = ExitedReason.INVALID_HP

        def events(drv: SearcherDriver) -> None:
            if reason is not None:
                drv.exited_early(trial, reason)
            drv.closed(trial)

        return self.call(exp, events, trial)

    def _guard(
        self, exp: Experiment, action: Callable[[], object], trial: Trial | None = None
    ) -> str | None:
        try:
            action()
        except SearcherError as e:
            return _error_message(exp.id, e, trial)
        return None

    def _answered_later(
        self, experiment_id: int, error: SearcherError | None, trial: Trial | None
    ) -> None:
        assert self._answered is not None
        message = None if error is None else _error_message(experiment_id, error, trial)
        self._answered(experiment_id, message)


def _error_message(experiment_id: int, error: SearcherError, trial: Trial | None) -> str:
    """The experiment's one-line error, naming the trial the event was about; logged."""
    who = f"trial {trial.id}: " if trial is not None else ""
    message = (
        f"searcher error: {error}"
        if str(error).startswith(who)
        else f"searcher error: {who}{error}"
    )
    logger.error("experiment %d: %s", experiment_id, message)
    return message
