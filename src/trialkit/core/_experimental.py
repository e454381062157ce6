"""``core_context.experimental``: Determined's ``ExperimentalCoreContext``, which links the
task's (inference) metrics to the checkpoint or model version it uses."""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("trialkit.core")


def _checkpoint_uuid(checkpoint: Any, call: str) -> str:
    uuid = getattr(checkpoint, "uuid", None)
    if not isinstance(uuid, str) or not uuid:
        raise TypeError(f"{call}: expected a Checkpoint (an object with .uuid), got {checkpoint!r}")
    return uuid


class ExperimentalCoreContext:
    """Same calls as Determined's. trialkit has no model registry to attach the link to, so it
    is written to the task's log (one line per call) and not stored."""

    def report_task_using_checkpoint(self, checkpoint: Any) -> None:
        """Say that this task's metrics come from ``checkpoint`` (a ``client.Checkpoint``)."""
        uuid = _checkpoint_uuid(checkpoint, "report_task_using_checkpoint")
        logger.info("this task uses checkpoint %s", uuid)

    def report_task_using_model_version(self, model_version: Any) -> None:
        """Say that this task's metrics come from ``model_version`` (its checkpoint)."""
        checkpoint = getattr(model_version, "checkpoint", None)
        if checkpoint is None:
            raise ValueError("report_task_using_model_version: the model version has no checkpoint")
        uuid = _checkpoint_uuid(checkpoint, "report_task_using_model_version")
        name = getattr(model_version, "model_name", None) or getattr(model_version, "model_id", "")
        version = getattr(model_version, "model_version", "")
        logger.info("this task uses model %s version %s (checkpoint %s)", name, version, uuid)


class DummyExperimentalCoreContext(ExperimentalCoreContext):
    """Local mode (no master): the calls do nothing, as Determined's dummy."""

    def report_task_using_checkpoint(self, checkpoint: Any) -> None:
        pass

    def report_task_using_model_version(self, model_version: Any) -> None:
        pass
