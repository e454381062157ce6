"""Local mode: no master. Reports go straight into the store under ``$TRIALKIT_HOME`` as an
unmanaged experiment with one trial, so runs outside the master can be listed afterwards."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from .._home import trialkit_home
from ..store import ExperimentState, NewMetric, NotFound, Store, TrialState
from ._backend import TrialBackend
from ._local_run import LocalRun

logger = logging.getLogger("trialkit.core")


def _script_name() -> str:
    return Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "interactive"


class LocalBackend(TrialBackend):
    """Writes the local store directly; never preempts (SIGTERM still does, see PreemptContext)."""

    def __init__(
        self,
        store: Store,
        checkpoint_storage: dict[str, Any],
        *,
        join: tuple[int, int] | None = None,
        run: LocalRun | None = None,
    ) -> None:
        self.store = store
        self.run_id = 0
        self._op_done = False
        self._owner = join is None
        if join is not None:  # a worker rank: the chief's experiment and trial
            self.experiment_id, self.trial_id = join
            return
        run = run or LocalRun()
        name = run.name or f"local: {_script_name()}"
        searcher = {"name": "single", "metric": None, "smaller_is_better": True, **run.searcher}
        config = {
            "name": name,
            "description": run.description,
            "labels": list(run.labels),
            "entrypoint": " ".join([os.path.basename(sys.executable), *sys.argv]),
            "searcher": searcher,
            "hyperparameters": dict(run.hparams),
            "data": dict(run.data),
            "checkpoint_storage": checkpoint_storage,
        }
        exp = store.create_experiment(
            name=name,
            config=config,
            description=run.description,
            labels=run.labels,
            unmanaged=True,
        )
        trial = store.create_trial(
            experiment_id=exp.id, request_id="local", hparams=dict(run.hparams), seed=0
        )
        self.experiment_id = exp.id
        self.trial_id = trial.id
        logger.info("local mode: tracking this run as experiment %d, trial %d", exp.id, trial.id)

    @classmethod
    def open(
        cls,
        checkpoint_storage: dict[str, Any],
        join: tuple[int, int] | None = None,
        run: LocalRun | None = None,
    ) -> LocalBackend:
        """Track this run as a new unmanaged experiment, or ``join`` (experiment, trial) ids."""
        return cls(Store.for_home(trialkit_home()), checkpoint_storage, join=join, run=run)

    def ship_metrics(self, reports: list[dict[str, Any]]) -> None:
        self.store.add_metrics(
            [
                NewMetric(
                    trial_id=self.trial_id,
                    run_id=self.run_id,
                    group=r["group"],
                    steps_completed=r["steps_completed"],
                    values=r["metrics"],
                    batch_metrics=r.get("batch_metrics"),
                )
                for r in reports
            ]
        )

    def report_checkpoint(self, record: dict[str, Any]) -> None:
        self.store.add_checkpoint(
            trial_id=self.trial_id, experiment_id=self.experiment_id, run_id=self.run_id, **record
        )

    def checkpoint_metadata(self, uuid: str) -> dict[str, Any] | None:
        try:
            return self.store.get_checkpoint(uuid).metadata
        except NotFound:
            return None

    def delete_checkpoint(self, uuid: str) -> None:
        self.store.set_checkpoint_state(uuid, "DELETED")

    def preemption_requested(self, timeout: float) -> bool:
        return False

    def ack_preemption(self) -> None:
        pass

    def searcher_operation(self) -> tuple[int | None, bool]:
        # Like Determined off-cluster: a single operation of length 1.
        return (None, True) if self._op_done else (1, False)

    def complete_operation(self, length: int, metric: Any) -> None:
        self._op_done = True

    def report_progress(self, value: float, *, raw: bool) -> None:
        self.store.update_trial(self.trial_id, progress=float(value))

    def set_status(self, status: str) -> None:
        self.store.update_trial(self.trial_id, status=status)

    def report_early_exit(self, reason: str) -> None:
        self.store.update_trial(self.trial_id, early_exit=reason)

    def best_validation(self) -> float | None:
        return None

    def last_validation(self) -> int | None:
        return self.store.last_validation_steps(self.trial_id)

    def close(self, exc: BaseException | None = None) -> None:
        if not self._owner:
            self.store.close()
            return
        failed = exc is not None
        ended = time.time()
        self.store.update_trial(
            self.trial_id,
            state=TrialState.ERROR if failed else TrialState.COMPLETED,
            ended_at=ended,
        )
        self.store.update_experiment(
            self.experiment_id,
            state=ExperimentState.ERROR if failed else ExperimentState.COMPLETED,
            progress=1.0 if not failed else 0.0,
            error=f"{type(exc).__name__}: {exc}" if failed else None,
            ended_at=ended,
        )
        self.store.close()
