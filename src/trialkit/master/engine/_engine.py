"""The engine: wires the scheduler, the process supervisor, log capture and the searcher router
to the lifecycle state machines (``_lifecycle``, applied by ``_transitions``, the one writer of
trial and experiment state). One thread ticks; API calls come in through its methods, which take
the engine's own lock. A custom searcher's process is never waited for under that lock: it
answers on its experiment's own thread, which takes the lock to apply the answer
(``_searcher_answered``), so a hung one delays its own experiment only."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import Generation, MasterConfig
from ...searcher import Operation
from ...store import Experiment, ExperimentState, SearcherFacts, Store, StoreError, Trial
from ..housekeeping._gc import finish_pending_deletes_after
from ..ingest import LocalRunIngest
from ..runs._pools import Pool
from ..runs._process_table import Supervisor
from ..runs._run_dir import RunStarter, RunTarget
from ..search._driver import SearcherDriver
from ..search._experiment_config import config_of
from ..search._router import SearcherRouter
from ._lifecycle import ExperimentEvent, adopted_phase
from ._periodic import TrialSupervision
from ._transitions import Transitions

logger = logging.getLogger("trialkit.master")

_SEARCHING = (ExperimentState.ACTIVE, ExperimentState.PAUSED)
_LIVE_EXPERIMENT_STATES = (
    ExperimentState.ACTIVE,
    ExperimentState.PAUSED,
    ExperimentState.STOPPING_CANCELED,
    ExperimentState.STOPPING_ERROR,
)


@dataclass
class EngineSettings:
    home: Path
    slots: int
    gpus: bool = False
    kill_grace: float = 10.0
    #: How long a paused trial may take to checkpoint and exit before it is terminated, when
    #: the config sets no preemption_timeout (Determined's 3600 s is long for one machine).
    preemption_timeout: float = 60.0
    #: How often trial processes are checked for exit and their logs tailed (cheap: no queries).
    tick: float = 0.1
    #: How often experiments are advanced and trials scheduled without an event asking for it
    #: (API calls that change anything wake the engine at once; a trial exiting does too).
    full_tick: float = 1.0
    #: The resource pools (master.yaml); the local pool alone by default.
    master_config: MasterConfig = field(default_factory=MasterConfig)


def _completion_taken(facts: SearcherFacts, length: int) -> bool:
    """A 0.37 completion the master took already, sent again because its answer was lost (the
    master was killed before replying): the same op, done; or an op shorter than the current
    one, since a trial's ops only grow and built-in searchers give the next only after the one
    before completed. (A custom searcher that replaces an op in flight: the trial trains on to
    the new length, and the searcher does not hear of the old one.)"""
    if facts.op_length is None:
        return False
    if facts.op_complete:
        return length == facts.op_length
    return length < facts.op_length


def _remote_pools(master: MasterConfig) -> dict[str, Pool]:
    """The configured Ray pools (``ray`` is imported only when there is one)."""
    if not master.ray_pools():
        return {}
    from ..runs._ray_pool import RayPool, connect

    pools: dict[str, Pool] = {}
    for name, cfg in master.ray_pools().items():
        connect(cfg, name)
        pools[name] = RayPool(name, cfg)
    return pools


class Engine:
    """Owns every running trial process of this master."""

    def __init__(
        self, store: Store, settings: EngineSettings, master_url: str, token: str, master_file: Path
    ) -> None:
        self.store = store
        self.settings = settings
        self._lock = threading.RLock()
        self._procs = Supervisor(
            store,
            settings.home,
            settings.slots,
            _remote_pools(settings.master_config),
            settings.gpus,
        )
        self._searchers = SearcherRouter(store, self._lock, self._searcher_answered)
        self._local_runs = LocalRunIngest(store, settings.home)
        self._states = Transitions(store, self._procs, self._searchers)
        target = RunTarget(settings.home, settings.gpus, master_url, token, master_file)
        self._runs = RunStarter(store, target)
        self._supervision = TrialSupervision(
            store, settings, self._procs, self._searchers, self._states, self._runs
        )
        #: experiments whose creation failed in the store, still to delete
        self._abandoned: set[int] = set()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="trialkit-engine", daemon=True)

    # Life cycle --------------------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            self._recover()
            self._local_runs.ingest()  # what local runs journaled while no master was up
        self._thread.start()
        finish_pending_deletes_after(self.store)  # the checkpoint deletes a stopped master left

    def stop(self) -> None:
        """Stop supervising; trial processes keep running and the next master adopts them."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        with self._lock:
            drivers = self._searchers.close()  # custom searcher processes end with the master
        for drv in drivers:  # their threads close them, and need the lock to end a call
            drv.join(timeout=10)

    def wake(self) -> None:
        self._wake.set()

    def _searcher_answered(self, experiment_id: int, error: str | None) -> None:
        """A custom searcher's answer was applied (the lock held): act on it as after a call."""
        self._states.searcher_said(self.store.get_experiment(experiment_id), error)
        self.wake()

    def _loop(self) -> None:
        # A full tick lists every trial of each live experiment, CPU taken from the trials on
        # the same cores (bench/README.md: engine-tick). Only process exits and logs are polled
        # that often now.
        full_due = 0.0
        woken = True
        while not self._stop.is_set():
            try:
                with self._lock:
                    exited = self._supervision.reap()
                    # every tick, so a local run is listed as soon as it reports: a stat per
                    # journal when nothing changed
                    self._local_runs.ingest()
                    now = time.monotonic()
                    if woken or exited or now >= full_due:
                        self._tick()
                        full_due = now + self.settings.full_tick
            except Exception:
                logger.exception("engine tick failed")
            woken = self._wake.wait(self.settings.tick)
            self._wake.clear()

    def _tick(self) -> None:
        self._delete_abandoned()
        for exp in self.store.list_experiments(states=_LIVE_EXPERIMENT_STATES):
            if not exp.unmanaged and exp.id not in self._abandoned:
                self._supervision.advance(exp)
        self._supervision.schedule()

    def _recover(self) -> None:
        """Adopt trial processes a previous master left running, stop the runs it started but
        never recorded; reload searchers."""
        for exp in self.store.list_experiments(states=_LIVE_EXPERIMENT_STATES):
            if exp.unmanaged:
                continue
            self._runs.remove_stale_partials(exp)
            unrecorded = []
            for trial in self.store.list_trials(exp.id):
                self._runs.register_journal(trial)
                if trial.state.ended:
                    continue
                # A run in flight holds slots; a Ray run has no local pid.
                if trial.pid is None and not trial.slots:
                    unrecorded.append(trial)
                    continue
                pool = self.settings.master_config.resolve(config_of(exp).resources.resource_pool)
                self._procs.adopt(trial, pool)
                self._states.adopted(trial, adopted_phase(exp.state, trial.searcher.stop_requested))
            self._procs.stop_unrecorded_runs(unrecorded)
            # after adopting: a searcher that fails to load stops the adopted processes too
            self._states.searcher_said(exp, self._searchers.load(exp))

    # Queries from the API ----------------------------------------------------------------------

    def pool_capacity(self, pool: str) -> int | None:
        """The slots ``pool`` has now (a Ray cluster's CPUs or GPUs); None if it cannot say."""
        found = self._procs.pools.get(pool)
        try:
            return found.capacity() if found is not None else None
        except Exception as e:  # the cluster is unreachable: the run will wait, then time out
            logger.warning("resource pool %s: capacity unknown: %s", pool, e)
            return None

    def pool_infos(self) -> list[dict[str, Any]]:
        """Each resource pool as ``master status`` shows it (fields of ``rest.PoolInfo``)."""
        return [
            {"name": name, "slot_type": "gpu" if pool.gpus else "cpu", **pool.describe()}
            for name, pool in self._procs.pools.items()
        ]

    def has_process(self, trial_id: int) -> bool:
        return self._procs.has(trial_id)

    def running_trial_ids(self) -> list[int]:
        """Trials with a live process, for ``master status`` and idle shutdown."""
        with self._lock:
            return self._procs.trial_ids()

    def should_preempt(self, trial_id: int) -> bool:
        return self._states.should_preempt(trial_id)

    def driver(self, experiment_id: int) -> SearcherDriver | None:
        """The experiment's SearcherDriver (None when it has none loaded)."""
        return self._searchers.driver(experiment_id)

    def current_trial(self, trial_id: int) -> Trial:
        """The trial once the engine is between two steps (e.g. done recording a new run)."""
        with self._lock:
            return self.store.get_trial(trial_id)

    def searcher_events(self, experiment_id: int, after: int) -> tuple[list[Any], dict[str, Any]]:
        """Events a custom searcher's runner has not seen, and the trials' progress."""
        with self._lock:
            drv = self._searchers.driver(experiment_id)
            queue = drv.runner_queue() if drv is not None else None
            if queue is None:
                return [], {}
            return queue.events_after(after), dict(queue.trial_progress)

    # Commands ----------------------------------------------------------------------------------

    def start_experiment(self, exp: Experiment) -> None:
        """Load (or start) the experiment's search. One that cannot even be loaded (not a
        searcher error: that fails the experiment the usual way) ends it ERROR, never left
        ACTIVE with nothing to advance it, and the exception is raised again. One the store
        failed to start (a full disk) is deleted, as if never created: its creator was told
        it failed, and a second try must not leave two."""
        with self._lock:
            self._delete_abandoned()
            try:
                try:
                    error = self._searchers.load(exp)
                except StoreError:
                    raise
                except Exception as e:
                    self._states.could_not_start(exp, f"could not start: {e}")
                    raise
                self._states.searcher_said(exp, error)
            except StoreError:
                self._abandon(exp)
                raise
        self.wake()

    def _abandon(self, exp: Experiment) -> None:
        """Forget an experiment whose creation failed and delete its rows (now, or once the
        store takes writes again: the next tick or creation tries again)."""
        self._searchers.forget(exp.id)
        self._abandoned.add(exp.id)
        self._delete_abandoned()

    def _delete_abandoned(self) -> None:
        for experiment_id in sorted(self._abandoned):
            try:
                self.store.delete_experiment_rows(experiment_id)
            except StoreError as e:
                logger.warning(
                    "experiment %d: its creation failed; deleting it failed too "
                    "(tried again later): %s",
                    experiment_id,
                    e,
                )
                continue
            self._abandoned.discard(experiment_id)
            logger.info("experiment %d: its creation failed; deleted", experiment_id)

    def pause(self, exp: Experiment) -> Experiment:
        return self._command(exp, ExperimentEvent.PAUSE)

    def activate(self, exp: Experiment) -> Experiment:
        return self._command(exp, ExperimentEvent.ACTIVATE)

    def kill(self, exp: Experiment) -> Experiment:
        return self._command(exp, ExperimentEvent.KILL)

    def _command(self, exp: Experiment, event: ExperimentEvent) -> Experiment:
        with self._lock:
            exp = self._states.experiment(self.store.get_experiment(exp.id), event)
        self.wake()
        return exp

    # Reports from trials -----------------------------------------------------------------------

    def validation_reported(self, trial: Trial, metrics: Mapping[str, Any]) -> None:
        """0.38: every validation report goes to the searcher. A custom searcher's process gets
        it in turn on its own thread: the metric POST does not wait for its answer."""
        with self._lock:
            exp = self.store.get_experiment(trial.experiment_id)
            drv = self._searchers.driver(exp.id)
            if drv is None or drv.generation != Generation.REPORTS or exp.state not in _SEARCHING:
                return  # after a searcher error (STOPPING_ERROR) later reports change nothing
            error = self._searchers.call(
                exp, lambda d: d.validation_completed(trial, metrics, None), trial
            )
            self._states.searcher_said(exp, error)
        self.wake()

    def operation_completed(self, trial: Trial, length: int, metric: Any) -> None:
        """0.37: the chief finished its op; the searcher decides before the answer goes back, so
        the trial's next ``searcher_operation`` finds its next op. A custom searcher's process
        is waited for without the lock, at most its call timeout: a trial whose searcher is
        slower sees no op, exits acknowledging that, and is relaunched once one comes."""
        with self._lock:
            trial = self.store.get_trial(trial.id)
            if _completion_taken(trial.searcher, length):
                logger.info(
                    "trial %d: op %d was completed already (a retried report)", trial.id, length
                )
                return
            if trial.searcher.op_complete or trial.searcher.op_length != length:
                raise ValueError(
                    f"trial {trial.id}: expected completion of op length {trial.searcher.op_length} "
                    f"(completed={trial.searcher.op_complete}) but received length {length}"
                )
            exp = self.store.get_experiment(trial.experiment_id)
            done = self.store.update_trial(trial.id, op_complete=True, progress=1.0)

            def tell(d: Any) -> None:
                d.validation_completed(done, {d.metric: metric} if d.metric else {}, length)

            self._states.searcher_said(exp, self._searchers.call(exp, tell, done, load=True))
            drv = self._searchers.driver(exp.id)
        self.wake()
        if drv is not None:
            drv.wait_for_answers()

    def progress_reported(self, trial: Trial, value: float, raw: bool) -> None:
        with self._lock:
            if not (raw and trial.searcher.op_length):
                self.store.update_trial(trial.id, progress=value)
                return
            share = min(max(value / trial.searcher.op_length, 0.0), 1.0)
            self.store.update_trial(trial.id, progress=share)
            exp = self.store.get_experiment(trial.experiment_id)
            error = self._searchers.call(exp, lambda d: d.progress_reported(trial, value), trial)
            self._states.searcher_said(exp, error)
        self.wake()

    def remote_searcher_operations(
        self, exp: Experiment, ops: list[Operation], last_event_id: int, progress: float | None
    ) -> bool:
        """Operations from a custom searcher run in the user's process (see search._driver)."""
        applied = [False]

        def apply(d: Any) -> None:
            applied[0] = d.remote_operations(ops, last_event_id, progress)

        with self._lock:
            if self._searchers.driver(exp.id) is None:
                return False
            self._states.searcher_said(exp, self._searchers.call(exp, apply))
        self.wake()
        return applied[0]

    def ack(self, trial: Trial, run_id: int) -> None:
        with self._lock:
            self.store.update_trial(trial.id, acked_run_id=run_id)
        self.wake()
