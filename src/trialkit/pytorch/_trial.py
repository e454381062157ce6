"""``PyTorchTrial``: the user contract, and the checks that name what is wrong in one line."""

from __future__ import annotations

import abc
import inspect
from typing import Any

import torch

from ._callback import PyTorchCallback
from ._context import PyTorchTrialContext
from ._data import DataLoader, data_length
from ._reducer import Reducer


class PyTorchTrial(abc.ABC):
    """Subclass, wrap models/optimizers in ``__init__``, and implement the data loaders,
    ``train_batch`` and exactly one of ``evaluate_batch`` / ``evaluate_full_dataset``."""

    trial_context_class = PyTorchTrialContext

    @abc.abstractmethod
    def __init__(self, context: PyTorchTrialContext) -> None:
        pass

    @abc.abstractmethod
    def train_batch(
        self, batch: Any, epoch_idx: int, batch_idx: int
    ) -> torch.Tensor | dict[str, Any]:
        """One training step; return the loss tensor or a dict of metrics."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> DataLoader:
        pass

    @abc.abstractmethod
    def build_validation_data_loader(self) -> DataLoader:
        pass

    def build_callbacks(self) -> dict[str, PyTorchCallback]:
        return {}

    def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        raise NotImplementedError

    def evaluate_full_dataset(
        self, data_loader: torch.utils.data.DataLoader[Any]
    ) -> dict[str, Any]:
        raise NotImplementedError

    def evaluation_reducer(self) -> Reducer | dict[str, Reducer]:
        return Reducer.AVG

    def get_batch_length(self, batch: Any) -> int:
        return data_length(batch)


class TrialContractError(ValueError):
    """A Trial that cannot run; the message is one line naming the fix."""


def _overrides(trial: Any, base: type, name: str) -> bool:
    return getattr(type(trial), name) is not getattr(base, name)


def check_one_evaluate(
    trial: Any, base: type, error: type[TrialContractError] = TrialContractError
) -> None:
    """Exactly one of evaluate_batch / evaluate_full_dataset, overridden from ``base`` (the
    PyTorchTrial and DeepSpeedTrial contracts alike)."""
    name = type(trial).__name__
    batch = _overrides(trial, base, "evaluate_batch")
    full = _overrides(trial, base, "evaluate_full_dataset")
    if batch and full:
        raise error(
            f"{name} defines both evaluate_batch and evaluate_full_dataset: keep exactly one"
        )
    if not batch and not full:
        raise error(
            f"{name} defines neither evaluate_batch nor evaluate_full_dataset: implement exactly one"
        )


def check_trial(trial: PyTorchTrial, context: PyTorchTrialContext) -> None:
    """Refuse a Trial that cannot run, with one line naming the fix."""
    name = type(trial).__name__
    if not isinstance(trial, PyTorchTrial):
        raise TrialContractError(f"{name} is not a trialkit.pytorch.PyTorchTrial subclass")
    if not context.models:
        raise TrialContractError(
            f"{name}.__init__ did not call context.wrap_model(...): wrap at least one model"
        )
    if not context.optimizers:
        raise TrialContractError(
            f"{name}.__init__ did not call context.wrap_optimizer(...): wrap at least one optimizer"
        )
    check_one_evaluate(trial, PyTorchTrial)


def evaluate_batch_takes_index(trial: Any) -> bool:
    params = list(inspect.signature(trial.evaluate_batch).parameters.values())
    return any(p.name == "batch_idx" for p in params) or len(params) >= 2
