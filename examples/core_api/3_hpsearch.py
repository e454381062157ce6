"""Stage 3: hyperparameter search; train to each searcher operation's length, report the metric."""

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
    return (x, steps_completed) if ckpt_trial_id == trial_id else (x, 0)


def main(core_context: core.Context, latest_checkpoint, trial_id: int, increment_by: int) -> None:
    x = 0
    starting_batch = 0
    if latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(latest_checkpoint) as path:
            x, starting_batch = load_state(trial_id, path)

    batch = starting_batch
    last_checkpoint_batch = None
    for op in core_context.searcher.operations():
        while batch < op.length:
            x += increment_by
            steps_completed = batch + 1
            time.sleep(0.01)
            if steps_completed % 10 == 0:
                core_context.train.report_training_metrics(
                    steps_completed=steps_completed, metrics={"x": x}
                )
                op.report_progress(steps_completed)
                checkpoint_metadata = {"steps_completed": steps_completed}
                with core_context.checkpoint.store_path(checkpoint_metadata) as (path, storage_id):
                    save_state(x, steps_completed, trial_id, path)
                last_checkpoint_batch = steps_completed
                if core_context.preempt.should_preempt():
                    return
            batch += 1
        # "Validate": the metric is the distance of x from a target the search should find.
        loss = abs(x - 400) / 400
        core_context.train.report_validation_metrics(
            steps_completed=steps_completed, metrics={"loss": loss, "x": x}
        )
        op.report_completed(loss)

    if last_checkpoint_batch != steps_completed:
        with core_context.checkpoint.store_path({"steps_completed": steps_completed}) as (
            path,
            storage_id,
        ):
            save_state(x, steps_completed, trial_id, path)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    info = det.get_cluster_info()
    assert info is not None, (
        "this example needs a master: trialkit experiment create 3_hpsearch.yaml ."
    )
    latest_checkpoint = info.latest_checkpoint
    trial_id = info.trial.trial_id
    hparams = info.trial.hparams
    with core.init() as core_context:
        main(core_context, latest_checkpoint, trial_id, hparams["increment_by"])
