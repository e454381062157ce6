"""The process supervisor: the trial processes of this master and the slots they hold.

It starts (through ``_run_dir``), adopts, signals and reaps processes; what a start, a signal or an
exit means for the trial is the engine's (``_lifecycle``) concern, not this module's."""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from collections.abc import Iterable
from pathlib import Path

import psutil

from ...config import LOCAL_POOL
from ...store import Store, Trial
from ._log_capture import LogCapture
from ._pools import LocalPool, Pool
from ._processes import PROCESSES, TrialProcess, run_tag

logger = logging.getLogger("trialkit.master")


class Supervisor:
    """Trial id -> its running process, plus the slots taken in each resource pool."""

    def __init__(
        self,
        store: Store,
        home: Path,
        slots: int,
        pools: dict[str, Pool] | None = None,
        gpus: bool = False,
    ) -> None:
        self.home = home
        self.logs = LogCapture(store)
        self.pools: dict[str, Pool] = {LOCAL_POOL: LocalPool(slots, gpus), **(pools or {})}
        self._procs: dict[int, TrialProcess] = {}
        #: Runs that ended, until the engine has handled their exit (it may fail to, the store
        #: being unreachable: then they are handed to it again on the next reap).
        self._exits: list[TrialProcess] = []
        self._slots: dict[int, tuple[str, list[int]]] = {}
        self._taken: dict[str, set[int]] = {name: set() for name in self.pools}

    # Queries -----------------------------------------------------------------------------------

    def has(self, trial_id: int) -> bool:
        return trial_id in self._procs

    def trial_ids(self) -> list[int]:
        return sorted(self._procs)

    def free_slots(self, pool: str = LOCAL_POOL) -> list[int]:
        return self.pools[pool].free_slots(self._taken[pool])

    def experiment_has_processes(self, experiment_id: int) -> bool:
        return any(p.experiment_id == experiment_id for p in self._procs.values())

    def trials_of(self, experiment_id: int) -> list[int]:
        """The experiment's trials that have a process."""
        return [t for t, p in self._procs.items() if p.experiment_id == experiment_id]

    def trial_dir(self, trial_id: int) -> Path:
        return self.home / "trials" / str(trial_id)

    # Processes ---------------------------------------------------------------------------------

    def adopt(self, trial: Trial, pool: str = LOCAL_POOL) -> TrialProcess:
        """Take over a run a previous master left running (its slots stay taken). A Ray run
        (no local pid) ended with the master that drove it: it reads as lost, and the trial
        restarts; nothing on this machine is signalled for it."""
        d = self.trial_dir(trial.id)
        proc = TrialProcess(
            trial.id,
            trial.experiment_id,
            trial.run_id,
            trial.pid,
            trial.pid_started or 0.0,
            d / f"run-{trial.run_id}.exit",
            d / "output.log",
            run_tag(self.home, trial.id, trial.run_id),
            trial.log_offset,
        )
        if trial.pid is None:
            proc.supervisor_lost = True
            proc.failure = "its run on the Ray cluster ended with the master that drove it"
        self._add(proc, list(trial.slots), pool if pool in self.pools else LOCAL_POOL)
        logger.info("trial %d: adopted run %d (pid %s)", trial.id, trial.run_id, trial.pid)
        return proc

    def stop_unrecorded_runs(self, trials: Iterable[Trial], timeout: float = 10.0) -> list[int]:
        """Kill the runs a previous master spawned but died before recording (the store has no
        process for the trial; the run's processes carry the next run's tag), and wait until
        they are gone, so that the run started next is the trial's only one: left running, they
        would report as that run too (two processes, every metric twice). The ids of the trials
        that had one."""
        wanted = {run_tag(self.home, t.id, t.run_id + 1): t.id for t in trials}
        found: set[int] = set()
        deadline = time.monotonic() + timeout
        while wanted:
            left = [
                (wanted[e.tag], e.process)
                for e in PROCESSES.scan()
                if e.tag is not None and e.tag in wanted and not e.zombie
            ]
            if not left:
                break
            for trial_id, process in left:
                if trial_id not in found:
                    found.add(trial_id)
                    logger.warning(
                        "trial %d: stopping a run the previous master started but never "
                        "recorded (it stopped in between); the trial starts it again",
                        trial_id,
                    )
                with contextlib.suppress(psutil.Error):
                    process.kill()
            if time.monotonic() > deadline:
                logger.error("unrecorded runs still running after %g s: %s", timeout, left)
                break
            time.sleep(0.05)
        return sorted(found)

    def take_slots(self, slots: list[int], pool: str = LOCAL_POOL) -> None:
        """Reserve slots for a run about to start (``release_slots`` if it does not)."""
        self._taken[pool].update(slots)

    def release_slots(self, slots: list[int], pool: str = LOCAL_POOL) -> None:
        self._taken[pool].difference_update(slots)

    def add(self, proc: TrialProcess, slots: list[int], pool: str = LOCAL_POOL) -> None:
        """A run just started on ``slots`` of ``pool`` (already taken)."""
        self._add(proc, slots, pool)

    def _add(self, proc: TrialProcess, slots: list[int], pool: str) -> None:
        self._procs[proc.trial_id] = proc
        self._slots[proc.trial_id] = (pool, slots)
        self.take_slots(slots, pool)

    def signal(self, trial_id: int, sig: signal.Signals) -> None:
        proc = self._procs.get(trial_id)
        if proc is not None:
            proc.signal_group(sig)

    def reap(self) -> list[TrialProcess]:
        """Tail every run's log; the runs that ended, once their whole log is stored (a long
        log takes a few ticks, a chunk each, so the engine is never held up for long). Their
        processes are forgotten and their slots freed; each is returned again by every reap
        until ``exit_handled``."""
        # One scan of the machine's processes for every run whose supervisor is gone.
        gone = {t for t, p in self._procs.items() if not p.ended and p.pid and not p.alive()}
        scan = PROCESSES.scan() if gone else None
        for trial_id, proc in list(self._procs.items()):
            # A run with a live supervisor is not over; one with no process here (on Ray) is
            # moved on by finished() every tick.
            if not proc.ended and (trial_id in gone or not proc.pid):
                proc.ended = proc.finished(scan if trial_id in gone else None)
            drained = self.logs.tail(proc, final=proc.ended)
            if proc.ended and drained:
                del self._procs[trial_id]
                pool, slots = self._slots.pop(trial_id, (LOCAL_POOL, []))
                self.release_slots(slots, pool)
                self._exits.append(proc)
        return list(self._exits)

    def exit_handled(self, proc: TrialProcess) -> None:
        """The engine recorded the end of ``proc``'s run: it is not returned by reap again."""
        self._exits.remove(proc)
