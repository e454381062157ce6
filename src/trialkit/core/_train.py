"""TrainContext: metrics, progress, status and early exits, reported without blocking."""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..storage import StorageManager
from ._backend import TrialBackend
from ._distributed import DistributedContext
from ._metrics import MetricsShipper
from ._tensorboard import TensorboardMode
from ._tensorboard_sync import upload_tensorboard_dir

logger = logging.getLogger("trialkit.core")


class EarlyExitReason(enum.Enum):
    INVALID_HP = "EXITED_REASON_INVALID_HP"
    USER_REQUESTED_STOP = "EXITED_REASON_USER_REQUESTED_STOP"


def _steps(steps_completed: int | None, legacy: dict[str, Any], call: str) -> int:
    """steps_completed, also accepting the older names seeds 000/002 use."""
    for old in ("latest_batch", "batches_trained"):
        if old in legacy:
            if steps_completed is not None:
                raise TypeError(f"{call}: pass steps_completed or {old}, not both")
            steps_completed = legacy.pop(old)
    if legacy:
        raise TypeError(f"{call}: unexpected argument(s) {', '.join(sorted(legacy))}")
    if steps_completed is None:
        raise TypeError(f"{call}: missing steps_completed")
    if isinstance(steps_completed, bool):
        raise TypeError(f"{call}: steps_completed must be an int, got {steps_completed!r}")
    if not isinstance(steps_completed, int):
        try:
            steps_completed = int(steps_completed)  # numpy ints, torch scalars
        except (TypeError, ValueError):
            raise TypeError(
                f"{call}: steps_completed must be an int, got {steps_completed!r}"
            ) from None
    return steps_completed


class TrainContext:
    """Report training/validation/any-group metrics and trial status to the master."""

    def __init__(
        self,
        backend: TrialBackend,
        shipper: MetricsShipper,
        dist: DistributedContext,
        tensorboard_mode: TensorboardMode,
        tensorboard_path: Path,
        storage: StorageManager,
    ) -> None:
        self._backend = backend
        self._shipper = shipper
        self._dist = dist
        self._tensorboard_mode = tensorboard_mode
        self._tensorboard_path = tensorboard_path
        self._storage = storage
        self._valid_groups: set[str] = {"training", "validation"}

    def _check_group(self, group: str) -> None:
        if group in self._valid_groups:
            return
        if not isinstance(group, str) or not group or "." in group:
            raise ValueError(f"metric group {group!r}: must be a non-empty string without '.'")
        self._valid_groups.add(group)

    def report_metrics(
        self, group: str, steps_completed: int, metrics: dict[str, Any], **legacy: Any
    ) -> None:
        """Report ``metrics`` in ``group`` at ``steps_completed``; returns at once."""
        steps = _steps(steps_completed, legacy, "report_metrics")
        self._check_group(group)
        self._shipper.put({"group": group, "steps_completed": steps, "metrics": dict(metrics)})

    def report_training_metrics(
        self,
        steps_completed: int | None = None,
        metrics: dict[str, Any] | None = None,
        batch_metrics: list[dict[str, Any]] | None = None,
        **legacy: Any,
    ) -> None:
        """Report training metrics (optionally per-batch metrics too); returns at once."""
        steps = _steps(steps_completed, legacy, "report_training_metrics")
        report: dict[str, Any] = {
            "group": "training",
            "steps_completed": steps,
            "metrics": dict(metrics or {}),
        }
        if batch_metrics is not None:
            report["batch_metrics"] = list(batch_metrics)
        self._shipper.put(report)

    def report_validation_metrics(
        self,
        steps_completed: int | None = None,
        metrics: dict[str, Any] | None = None,
        **legacy: Any,
    ) -> None:
        """Report validation metrics; the master feeds them to the searcher (0.38)."""
        steps = _steps(steps_completed, legacy, "report_validation_metrics")
        clean: dict[str, Any] = {}
        for key, value in (metrics or {}).items():
            if value is None:
                raise RuntimeError(
                    f"Validation metric '{key}' returned an invalid scalar value: None"
                )
            if isinstance(value, (bytes, bytearray)):
                logger.warning("validation metric %r is bytes; dropped", key)
                continue
            clean[key] = value
        self._shipper.put({"group": "validation", "steps_completed": steps, "metrics": clean})

    def report_progress(self, progress: float) -> None:
        """Progress of the trial as a fraction in [0, 1]."""
        if not 0 <= progress <= 1:
            raise ValueError(f"report_progress: progress must be in [0, 1], got {progress}")
        self._shipper.set_progress(float(progress), raw=False)

    def set_status(self, status: str) -> None:
        """A short line telling what the trial is doing now."""
        self._backend.set_status(str(status))

    def report_early_exit(self, reason: EarlyExitReason) -> None:
        """Say why the trial is exiting early (INVALID_HP is reported automatically)."""
        self._backend.report_early_exit(EarlyExitReason(reason).name)

    def get_experiment_best_validation(self) -> float | None:
        """Best searcher metric so far across the experiment (None if none yet)."""
        self._shipper.flush()
        return self._backend.best_validation()

    def _is_best_validation(self, steps_completed: int) -> bool | None:
        """Whether the validation just reported at ``steps_completed`` beat every validation of
        the experiment before it, as the master answered in the reply to its batch: waits for
        that batch's delivery, and asks nothing more (None: no answer came with the reply)."""
        self._shipper.flush()
        return self._shipper.is_best_validation(steps_completed)

    def _get_last_validation(self) -> int | None:
        self._shipper.flush()
        return self._backend.last_validation()

    def get_tensorboard_path(self) -> Path:
        """The directory to write TensorBoard event files into."""
        self._tensorboard_path.mkdir(parents=True, exist_ok=True)
        return self._tensorboard_path

    def upload_tensorboard_files(
        self,
        selector: Callable[[Path], bool] = lambda _: True,
        mangler: Callable[[Path, int], Path] = lambda p, __: p,
    ) -> None:
        """Copy TensorBoard files into checkpoint storage (TensorboardMode.MANUAL only), under
        ``tensorboard/experiment-<id>/trial-<id>/``: a directory or an object-store prefix."""
        if self._tensorboard_mode != TensorboardMode.MANUAL:
            raise RuntimeError(
                "upload_tensorboard_files() needs tensorboard_mode=TensorboardMode.MANUAL"
            )
        upload_tensorboard_dir(
            self._storage,
            self.get_tensorboard_path(),
            self._backend.tensorboard_prefix(),
            selector,
            lambda rel: mangler(rel, self._dist.rank),
        )
