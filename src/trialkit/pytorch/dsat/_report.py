"""Inside a dsat trial: report what DeepSpeed's autotuning wrote when it ended the run."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
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
        found = [
            Path(p)
            for p in (_defaults.MODEL_INFO_PROFILING_PATH, _defaults.AUTOTUNING_RESULTS_PATH)
            if Path(p).exists()
        ]
        if len(found) == 1 and core_context.distributed.rank == 0:
            results = json.loads(found[0].read_text())
            if found[0].name == _defaults.MODEL_INFO_PROFILING_PATH:
                results["gpu_mem"] = device_memory()
            steps = op.length if steps_completed is None else steps_completed
            core_context.train.report_validation_metrics(steps_completed=steps, metrics=results)
            op.report_completed(results)
        raise
