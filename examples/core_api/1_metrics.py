"""Stage 1: report training and validation metrics through the Core API."""

import logging
import time

import trialkit as det
from trialkit import core


def main(core_context: core.Context) -> None:
    x = 0
    for batch in range(100):
        x += 1
        time.sleep(0.01)
        steps_completed = batch + 1
        if steps_completed % 10 == 0:
            core_context.train.report_training_metrics(
                steps_completed=steps_completed, metrics={"x": x}
            )
    core_context.train.report_validation_metrics(steps_completed=steps_completed, metrics={"x": x})


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    with core.init() as core_context:
        main(core_context=core_context)
