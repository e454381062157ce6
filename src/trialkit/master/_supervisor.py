"""The process supervisor: the trial processes of this master and the slots they hold.

It starts (through ``_runs``), adopts, signals and reaps processes; what a start, a signal or an
exit means for the trial is the engine's (``_lifecycle``) concern, not this module's."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

from ..store import Store, Trial
from ._logcapture import LogCapture
from ._processes import TrialProcess, run_tag

logger = logging.getLogger("trialkit.master")


class Supervisor:
    """Trial id -> its running process, plus the free slots."""

    def __init__(self, store: Store, home: Path, slots: int) -> None:
        self.home = home
        self.logs = LogCapture(store)
        self._procs: dict[int, TrialProcess] = {}
        self._slots: dict[int, list[int]] = {}
        self._free = list(range(slots))

    # Queries -----------------------------------------------------------------------------------

    def has(self, trial_id: int) -> bool:
        return trial_id in self._procs

    def trial_ids(self) -> list[int]:
        return sorted(self._procs)

    def free_slots(self) -> list[int]:
        return list(self._free)

    def experiment_has_processes(self, experiment_id: int) -> bool:
        return any(p.experiment_id == experiment_id for p in self._procs.values())

    def trials_of(self, experiment_id: int) -> list[int]:
        """The experiment's trials that have a process."""
        return [t for t, p in self._procs.items() if p.experiment_id == experiment_id]

    def trial_dir(self, trial_id: int) -> Path:
        return self.home / "trials" / str(trial_id)

    # Processes ---------------------------------------------------------------------------------

    def adopt(self, trial: Trial) -> TrialProcess:
        """Take over a run a previous master left running (its slots stay taken)."""
        assert trial.pid is not None
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
        self._add(proc, list(trial.slots))
        logger.info("trial %d: adopted running process %d", trial.id, trial.pid)
        return proc

    def take_slots(self, slots: list[int]) -> None:
        """Reserve slots for a run about to start (``release_slots`` if it does not)."""
        self._free = [s for s in self._free if s not in slots]

    def release_slots(self, slots: list[int]) -> None:
        self._free = sorted(set(self._free) | set(slots))

    def add(self, proc: TrialProcess, slots: list[int]) -> None:
        """A run just started on ``slots`` (already taken)."""
        self._add(proc, slots)

    def _add(self, proc: TrialProcess, slots: list[int]) -> None:
        self._procs[proc.trial_id] = proc
        self._slots[proc.trial_id] = slots
        self.take_slots(slots)

    def signal(self, trial_id: int, sig: signal.Signals) -> None:
        proc = self._procs.get(trial_id)
        if proc is not None:
            proc.signal_group(sig)

    def reap(self) -> list[TrialProcess]:
        """Tail every run's log; the runs that ended, once their whole log is stored (a long
        log takes a few ticks, a chunk each, so the engine is never held up for long). Their
        processes are forgotten and their slots freed."""
        ended = []
        for trial_id, proc in list(self._procs.items()):
            if not proc.ended:
                proc.ended = proc.finished()
            drained = self.logs.tail(proc, final=proc.ended)
            if proc.ended and drained:
                del self._procs[trial_id]
                self.release_slots(self._slots.pop(trial_id, []))
                ended.append(proc)
        return ended
