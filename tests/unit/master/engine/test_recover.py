"""A restarted master's recovery against real processes: a run the previous master spawned but
died before recording is stopped before the trial's run is started again."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from tests.inprocess_master import TOKEN, inprocess_master
from trialkit.master.engine._engine import Engine, EngineSettings
from trialkit.master.runs._processes import TrialProcess, run_tag


def test_a_run_spawned_but_never_recorded_is_stopped_before_the_trial_starts_again(
    tmp_path: Path,
) -> None:
    """Seen under load: the master was SIGKILLed between spawning trial 3's run 1 and storing its
    pid; the next master started run 1 again beside it, and both reported (validation at step
    10 stored twice, and one run's completion refused)."""
    home = tmp_path / "home"
    with inprocess_master(home) as m:
        exp = m.create()
        [trial] = m.store.list_trials(exp)
        assert trial.pid is None and trial.run_id == 0
        orphan = TrialProcess.spawn(  # what the dead master started: the next run's tag
            trial_id=trial.id,
            experiment_id=exp,
            run_id=1,
            log_offset=0,
            argv=[sys.executable, "-c", "import time; time.sleep(120)"],
            env={},
            cwd=tmp_path,
            exit_file=tmp_path / "run-1.exit",
            log_file=tmp_path / "output.log",
            tag=run_tag(home, trial.id, 1),
        )
        try:
            assert orphan.alive()
            restarted = Engine(
                m.store, EngineSettings(home=home, slots=2), "http://127.0.0.1:9", TOKEN,
                home / "master.json",
            )  # fmt: skip
            restarted._recover()  # what start() does first, without its engine thread
            assert orphan.popen is not None
            orphan.popen.wait(timeout=15)  # raises if the unrecorded run is still running
            assert not orphan.leftovers(), "processes of the unrecorded run are left"
            after = m.store.get_trial(trial.id)
            assert after.pid is None and after.run_id == 0 and not after.state.ended
        finally:
            orphan.signal_group(signal.SIGKILL)
