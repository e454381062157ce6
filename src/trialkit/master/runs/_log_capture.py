"""Log capture: tail each run's log file into the store, a chunk per tick."""

from __future__ import annotations

from ...store import Store
from ._processes import TrialProcess


class LogCapture:
    """Stores the lines a run wrote since the last look, and how far it got (log_offset)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def tail(self, proc: TrialProcess, final: bool) -> bool:
        """Store the next chunk of the run's log; whether the end of the log was reached."""
        lines, offset, at_end = proc.read_chunk(proc.log_offset, final=final)
        if lines:
            self.store.add_logs(proc.trial_id, proc.run_id, lines)
            proc.recent_lines.extend(lines)
        if offset != proc.log_offset:
            proc.log_offset = offset
            self.store.update_trial(proc.trial_id, log_offset=offset)
        return at_end

    def note(self, trial_id: int, run_id: int, line: str) -> None:
        """A line the master itself adds to a run's log."""
        self.store.add_logs(trial_id, run_id, [line])
