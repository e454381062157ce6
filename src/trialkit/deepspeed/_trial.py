"""``DeepSpeedTrial``: the user contract, and the checks that name what is wrong in one line."""

from __future__ import annotations

import abc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..pytorch import PyTorchCallback, Reducer
from ..pytorch.shared import TrialContractError as _TorchContractError
from ..pytorch.shared import check_one_evaluate
from ._context import DeepSpeedTrialContext


class TrialContractError(_TorchContractError):
    """A DeepSpeedTrial that cannot run; the message is one line naming the fix."""


class DeepSpeedTrial(abc.ABC):
    """Subclass: build engines with ``deepspeed.initialize`` in ``__init__`` and wrap them
    (``context.wrap_model_engine``), implement the data loaders, ``train_batch`` and exactly one
    of ``evaluate_batch`` / ``evaluate_full_dataset``. Run it with ``Trainer(trial,
    context).fit(...)`` or as ``entrypoint: model_def:MyTrial``."""

    trial_context_class = DeepSpeedTrialContext

    @abc.abstractmethod
    def __init__(self, context: DeepSpeedTrialContext) -> None:
        pass

    @abc.abstractmethod
    def train_batch(
        self, dataloader_iter: Iterator[Any] | None, epoch_idx: int, batch_idx: int
    ) -> Any:
        """One micro batch (or, with pipeline parallelism or
        ``disable_auto_grad_accumulation``, one whole step): pull the data from
        ``dataloader_iter`` (None on ranks without a loader), forward, ``engine.backward``,
        ``engine.step``; return the loss tensor or a dict of metrics."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> Any:
        """A micro-batch sized ``trialkit.pytorch.DataLoader``, or None on ranks needing no data."""

    @abc.abstractmethod
    def build_validation_data_loader(self) -> Any:
        """Like build_training_data_loader, for validation."""

    def evaluate_batch(self, dataloader_iter: Iterator[Any] | None, batch_idx: int) -> Any:
        """Metrics of one validation batch pulled from ``dataloader_iter``."""
        raise NotImplementedError

    def evaluate_full_dataset(self, data_loader: Any) -> dict[str, Any]:
        """Metrics over the whole (unsharded) validation loader; called on every rank."""
        raise NotImplementedError

    def build_callbacks(self) -> dict[str, PyTorchCallback]:
        return {}

    def evaluation_reducer(self) -> Reducer | dict[str, Reducer]:
        return Reducer.AVG

    def save(self, context: DeepSpeedTrialContext, path: Path) -> None:
        """Save every engine into ``path`` (tag ``model<i>``); runs on every rank."""
        for i, engine in enumerate(context.models):
            engine.save_checkpoint(str(path), tag=f"model{i}")

    def load(self, context: DeepSpeedTrialContext, path: Path) -> None:
        """Load every engine from ``path`` (tag ``model<i>``); runs on every rank."""
        for i, engine in enumerate(context.models):
            tag = f"model{i}"
            if not (path / tag).is_dir():
                raise RuntimeError(
                    f"checkpoint at {path} has no DeepSpeed state for engine {i} (tag {tag})"
                )
            try:
                loaded, _ = engine.load_checkpoint(str(path), tag=tag)
            except AssertionError as e:
                detail = f": {e}" if str(e) else ""
                raise RuntimeError(f"failed to load DeepSpeed checkpoint {tag}{detail}") from None
            if loaded is None:
                raise RuntimeError(f"DeepSpeed found no checkpoint {tag} at {path}")


def check_trial(trial: DeepSpeedTrial, context: DeepSpeedTrialContext) -> None:
    """Refuse a DeepSpeedTrial that cannot run, with one line naming the fix.

    QUIRK decision: Determined makes evaluate_batch abstract, so it always wins over
    evaluate_full_dataset; here, as for PyTorchTrial, exactly one must be defined."""
    name = type(trial).__name__
    if not isinstance(trial, DeepSpeedTrial):
        raise TrialContractError(f"{name} is not a trialkit.deepspeed.DeepSpeedTrial subclass")
    if not context.models:
        raise TrialContractError(
            f"{name}.__init__ did not call context.wrap_model_engine(...): wrap at least one "
            "DeepSpeed engine"
        )
    check_one_evaluate(trial, DeepSpeedTrial, TrialContractError)
