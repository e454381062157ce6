"""``ModelParallelUnit``: which ranks shard the data, build data loaders and report metrics."""

from __future__ import annotations

import dataclasses
from typing import Any

from .. import core


@dataclasses.dataclass(frozen=True)
class ModelParallelUnit:
    """This rank's place in data parallelism, and whether it needs data and reports metrics."""

    data_parallel_rank: int
    data_parallel_world_size: int
    should_report_metrics: bool
    should_build_data_loader: bool


def make_data_parallel_mpu(distributed: core.DistributedContext) -> ModelParallelUnit:
    """Plain data parallelism: every rank is its own data shard, needs data and reports."""
    return ModelParallelUnit(distributed.rank, distributed.size, True, True)


def make_deepspeed_mpu(mpu: Any) -> ModelParallelUnit:
    """From DeepSpeed's ``PipelineParallelGrid`` (``engine.mpu`` / ``engine.grid``): data comes in
    on the first pipeline stage and the loss out of the last; one rank per model slice each."""
    num_stages = mpu.get_pipe_parallel_world_size()
    stage = mpu.get_stage_id()
    first_slice = mpu.get_slice_parallel_rank() == 0
    return ModelParallelUnit(
        data_parallel_rank=mpu.get_data_parallel_rank(),
        data_parallel_world_size=mpu.get_data_parallel_world_size(),
        should_report_metrics=first_slice and stage == num_stages - 1,
        should_build_data_loader=first_slice and stage in (0, num_stages - 1),
    )
