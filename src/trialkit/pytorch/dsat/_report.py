"""Inside a dsat trial: report what DeepSpeed's autotuning wrote when it ended the run."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from . import _defaults


def device_memory() -> int:
    """Bytes of memory of this worker's device: the GPU's, else (CPU training) the host's."""
    try:
        import torch

        if torch.cuda.is_available():
            return int(torch.cuda.get_device_properties(0).total_memory)
    except ImportError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def autotuning_results() -> dict[str, Any] | None:
    """What DeepSpeed's autotuning wrote in the working directory before it exited: the
    model-info profile (plus ``gpu_mem``) or the step metrics; None unless exactly one exists."""
    found = [
        Path(p)
        for p in (_defaults.MODEL_INFO_PROFILING_PATH, _defaults.AUTOTUNING_RESULTS_PATH)
        if Path(p).exists()
    ]
    if len(found) != 1:
        return None
    results: dict[str, Any] = json.loads(found[0].read_text())
    if found[0].name == _defaults.MODEL_INFO_PROFILING_PATH:
        results["gpu_mem"] = device_memory()
    return results


def report_results(
    core_context: Any, op: Any, steps_completed: int | None, results: Mapping[str, Any]
) -> None:
    """The chief reports ``results`` as validation metrics and as ``op``'s searcher metric."""
    steps = op.length if steps_completed is None else steps_completed
    core_context.train.report_validation_metrics(steps_completed=steps, metrics=dict(results))
    op.report_completed(dict(results))


@contextlib.contextmanager
def dsat_reporting_context(
    core_context: Any, op: Any, steps_completed: int | None = None
) -> Iterator[None]:
    """Wrap the DeepSpeed engine's ``forward``/``step`` calls of a Core API trial under dsat.

    DeepSpeed's autotuning ends the process (SystemExit) after its profile, having written
    ``model_info.json`` (the profiling trial) or ``autotuning_metric.json``; the chief reports
    that file as validation metrics and as ``op``'s searcher metric, then the exit goes on.
    """
    try:
        yield
    except SystemExit:
        results = autotuning_results()
        if results is not None and core_context.distributed.rank == 0:
            report_results(core_context, op, steps_completed, results)
        raise


def trial_reporting_context(
    core_context: Any, hparams: Mapping[str, Any] | None
) -> contextlib.AbstractContextManager[None]:
    """For a Trial class's harness: under dsat (the ``_use_dsat_mode`` hyperparameter dsat sets
    on every trial), report DeepSpeed's autotuning results when it ends the trial; else nothing."""
    if not (hparams or {}).get(_defaults.USE_DSAT_MODE_KEY):
        return contextlib.nullcontext()
    return _harness_reporting(core_context)


@contextlib.contextmanager
def _harness_reporting(core_context: Any) -> Iterator[None]:
    """``dsat_reporting_context`` without an operation in hand: on DeepSpeed's autotuning exit
    the chief takes the trial's current operation from the master (chief-only, no collective:
    the other ranks are exiting too) and completes it."""
    try:
        yield
    except SystemExit:
        results = autotuning_results()
        if results is not None and core_context.distributed.rank == 0:
            from ...core import SearcherMode

            ops = core_context.searcher.operations(SearcherMode.ChiefOnly, auto_ack=False)
            op = next(ops, None)
            if op is not None:
                report_results(core_context, op, None, results)
            ops.close()
        raise
