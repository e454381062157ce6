"""Stage 2: checkpoint, resume from the latest checkpoint, and honour preemption (pause)."""

import logging
import pathlib
import time

import trialkit as det
from trialkit import core


def save_state(
    x: int, steps_completed: int, trial_id: int, checkpoint_directory: pathlib.Path
) -> None:
    with checkpoint_directory.joinpath("state").open("w") as f:
        f.write(f"{x},{steps_completed},{trial_id}")


def load_state(trial_id: int, checkpoint_directory: pathlib.Path) -> tuple:
    with checkpoint_directory.joinpath("state").open("r") as f:
        x, steps_completed, ckpt_trial_id = (int(field) for field in f.read().split(","))
    if ckpt_trial_id == trial_id:
        return x, steps_completed
    # A new trial warm-started from another trial's checkpoint: keep the weight, restart counting.
    return x, 0


def main(core_context: core.Context, latest_checkpoint, trial_id: int) -> None:
    x = 0
    starting_batch = 0
    if latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(latest_checkpoint) as path:
            x, starting_batch = load_state(trial_id, path)

    for batch in range(starting_batch, 100):
        x += 1
        time.sleep(0.02)
        steps_completed = batch + 1
        if steps_completed % 10 == 0:
            core_context.train.report_training_metrics(
                steps_completed=steps_completed, metrics={"x": x}
            )
            checkpoint_metadata = {"steps_completed": steps_completed}
            with core_context.checkpoint.store_path(checkpoint_metadata) as (path, storage_id):
                save_state(x, steps_completed, trial_id, path)
            if core_context.preempt.should_preempt():
                return
    core_context.train.report_validation_metrics(steps_completed=steps_completed, metrics={"x": x})


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    info = det.get_cluster_info()
    latest_checkpoint = info.latest_checkpoint if info else None
    trial_id = info.trial.trial_id if info else -1
    with core.init() as core_context:
        main(core_context, latest_checkpoint, trial_id)
