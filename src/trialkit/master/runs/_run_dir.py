"""Starting a trial's run: a fresh working copy of the model definition, its checkpoints in
order, and the process spawned under the supervisor."""

from __future__ import annotations

import dataclasses
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from ... import _modeldir
from ...config import LOCAL_POOL
from ...storage import build as build_storage
from ...store import Experiment, Store, Trial
from ..housekeeping._journal import register_journaled_checkpoints
from ..search._experiment_config import config_of
from ..search._warm_start import warm_start_checkpoint
from ._bind_mounts import make_bind_mounts
from ._launch import build_launch, describe_argv
from ._pools import Pool, RunLaunch
from ._processes import TrialProcess, run_tag

logger = logging.getLogger("trialkit.master")


@dataclass(frozen=True)
class RunTarget:
    """Where trials report to, and what they run on."""

    home: Path
    gpus: bool
    master_url: str
    token: str
    master_file: Path


class RunStarter:
    """Prepares and spawns runs (no state: what a start means is the engine's)."""

    def __init__(self, store: Store, target: RunTarget) -> None:
        self.store = store
        self.target = target

    def trial_dir(self, trial_id: int) -> Path:
        return self.target.home / "trials" / str(trial_id)

    def start(
        self, exp: Experiment, trial: Trial, run_id: int, slots: list[int], pool: Pool
    ) -> TrialProcess:
        """Unpack the model definition into a fresh working copy and start the run in ``pool``.
        The run gets the config with its storage credentials (the store keeps them masked)."""
        t = self.target
        exp = dataclasses.replace(exp, config=self.store.config_with_secrets(exp.id))
        tdir = self.trial_dir(trial.id)
        workdir = tdir / "model"
        shutil.rmtree(workdir, ignore_errors=True)
        archive = self.store.get_model_def(exp.id)
        if archive:
            _modeldir.unpack(archive, workdir)
        else:
            workdir.mkdir(parents=True, exist_ok=True)
        make_bind_mounts(config_of(exp).bind_mounts, workdir)
        self.remove_stale_partials(exp)  # e.g. this trial's previous run, killed mid-save
        self.register_journal(trial)  # saved while the master was away: resume from them
        latest = self.store.latest_checkpoint(trial.id)
        spec = build_launch(
            experiment=exp,
            trial=trial,
            run_id=run_id,
            workdir=workdir,
            info_file=tdir / "cluster_info.json",
            master_url=t.master_url,
            token=t.token,
            master_file=t.master_file,
            home=t.home,
            slot_ids=slots,
            gpus=pool.gpus and pool.name == LOCAL_POOL,  # Ray sets a Ray run's own GPUs
            latest_checkpoint=latest.uuid if latest else warm_start_checkpoint(config_of(exp)),
            steps_completed=latest.steps_completed if latest else 0,
        )
        with open(tdir / "output.log", "ab") as log:
            log.write(f"[trialkit] run {run_id}: {describe_argv(spec.argv)}\n".encode())
        launch = RunLaunch(
            trial_id=trial.id,
            experiment_id=exp.id,
            run_id=run_id,
            log_offset=trial.log_offset,
            argv=spec.argv,
            env=spec.env,
            workdir=workdir,
            trial_dir=tdir,
            exit_file=tdir / f"run-{run_id}.exit",
            log_file=tdir / "output.log",
            tag=run_tag(t.home, trial.id, run_id),
            slots=slots,
            model_def=archive,
            info=spec.info,
        )
        return pool.spawn(launch)

    def remove_stale_partials(self, exp: Experiment) -> None:
        """Delete checkpoint directories that runs killed mid-save left half-written in the
        experiment's storage (never one a live process is writing)."""
        try:
            storage = self.store.config_with_secrets(exp.id).get("checkpoint_storage")
            if not storage:  # search._create always sets one
                return
            removed = build_storage(storage).remove_stale_partials()
        except Exception as e:  # a cleanup must never stop a launch
            logger.warning("experiment %d: partial checkpoints not cleaned: %s", exp.id, e)
            return
        for path in removed:
            logger.info("experiment %d: removed partial checkpoint %s", exp.id, path)

    def register_journal(self, trial: Trial) -> None:
        """Register the checkpoints the trial saved but could not report (master away)."""
        try:
            register_journaled_checkpoints(self.store, trial, self.trial_dir(trial.id))
        except Exception as e:  # never stops a launch or a recovery; retried next time
            logger.warning("trial %d: journaled checkpoints not registered: %s", trial.id, e)
