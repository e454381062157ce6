"""The PyTorch strategy for the shared loop: step a batch, validate, save and load state in
Determined's checkpoint layout (state_dict.pth, load_data.json, code/)."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from ._context import PyTorchTrialContext
from ._data import DataLoader, data_length, to_device
from ._host_metrics import detached
from ._runtime import PyTorchRuntime
from ._strategy_base import TorchStrategyBase, repeat_forever
from ._trial import PyTorchTrial, check_trial, evaluate_batch_takes_index

logger = logging.getLogger("trialkit.pytorch")

STATE_DICT = "state_dict.pth"
LOAD_DATA = "load_data.json"
_LEGACY_STATE_FILES = (
    STATE_DICT,
    "determined/state_dict.pth",
    "pedl/state_dict.pth",
    "checkpoint.pt",
)


def _plain_module(model: torch.nn.Module) -> torch.nn.Module:
    return model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model


def load_model_state(model: torch.nn.Module, state: dict[str, Any]) -> None:
    """Load weights saved with or without DDP's ``module.`` prefix."""
    target = _plain_module(model)
    if state and all(k.startswith("module.") for k in state):
        state = {k[len("module.") :]: v for k, v in state.items()}
    target.load_state_dict(state)


def _states(state: dict[str, Any], key: str, legacy: str, wanted: int, what: str) -> list[Any]:
    """The saved states for ``wanted`` objects; Determined's single-object legacy keys are
    accepted when the trial wraps exactly one object."""
    if key in state and legacy in state:
        raise RuntimeError(f"checkpoint has both {key!r} and the legacy {legacy!r}; keep one")
    if key in state:
        states = list(state[key])
    elif legacy in state and wanted == 1:
        states = [state[legacy]]
    elif legacy in state:
        raise RuntimeError(
            f"checkpoint's legacy {legacy!r} holds one {what}; this trial wraps {wanted}"
        )
    else:
        states = []
    if len(states) != wanted:
        raise RuntimeError(
            f"checkpoint has {len(states)} {what} state(s); this trial wraps {wanted}"
        )
    return states


class TorchStrategy(TorchStrategyBase):
    """Everything the loop needs from a PyTorchTrial and its context."""

    trial: PyTorchTrial
    context: PyTorchTrialContext
    runtime: PyTorchRuntime

    def __init__(
        self, trial: PyTorchTrial, context: PyTorchTrialContext, *, is_trainer: bool = True
    ) -> None:
        check_trial(trial, context)
        super().__init__(trial, context)
        self.is_trainer = is_trainer
        self._full_dataset = (
            type(trial).evaluate_full_dataset is not PyTorchTrial.evaluate_full_dataset
        )
        self._eval_with_index = not self._full_dataset and evaluate_batch_takes_index(trial)
        self._default_batch_length = type(trial).get_batch_length is PyTorchTrial.get_batch_length

    # Data ---------------------------------------------------------------------------------------

    def _check_loader(self, loader: Any, which: str) -> None:
        if isinstance(loader, DataLoader):
            return
        if isinstance(loader, torch.utils.data.DataLoader) and self.runtime.allow_torch_loader:
            return
        raise TypeError(
            f"{type(self.trial).__name__}.build_{which}_data_loader() returned a "
            f"{type(loader).__name__}; return a trialkit.pytorch.DataLoader (or call "
            "context.experimental.disable_dataset_reproducibility_checks() to use a torch DataLoader)"
        )

    def build_train_iterator(self, skip: int, seed: int) -> tuple[Iterator[Any], int]:
        loader = self.trial.build_training_data_loader()
        self._check_loader(loader, "training")
        # Determined builds the validation loader next, before iterating: a builder that draws
        # from the global RNG then leaves it where Determined's does.
        self._validation_loader()
        if isinstance(loader, DataLoader):
            it, epoch_len = self._sharded_training(loader, skip, same_rng_on_all_ranks=True)
        else:
            epoch_len = len(loader) if hasattr(loader, "__len__") else sys.maxsize
            it = repeat_forever(loader)
            for _ in range(skip):
                next(it)
        self.runtime.epoch_len = epoch_len
        return it, epoch_len

    def _data_shard(self) -> tuple[int, int]:
        return self.dist.size, self.dist.rank

    def _build_validation_loader(self) -> Any:
        loader = self.trial.build_validation_data_loader()
        self._check_loader(loader, "validation")
        return loader

    def batch_length(self, batch: Any) -> int:
        if self._default_batch_length:
            return data_length(batch)
        return int(self.trial.get_batch_length(batch))

    # Training -----------------------------------------------------------------------------------

    def _settle_gradients(self) -> None:
        self.runtime.release_retired_grads()

    def train_batch(
        self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int
    ) -> dict[str, Any]:
        ctx, runtime = self.context, self.runtime
        runtime.current_batch_idx = batch_idx
        if runtime.auto_to_device:
            batch = to_device(batch, ctx.device, runtime.warned_types)
        out = self.trial.train_batch(batch, epoch_idx, batch_idx)
        if isinstance(out, torch.Tensor):
            out = {"loss": out}
        elif not isinstance(out, dict):
            raise TypeError(
                f"{type(self.trial).__name__}.train_batch must return a tensor or a dict, got {type(out).__name__}"
            )
        agg = runtime.aggregation_frequency
        if (batch_idx + 1) % agg == 0:
            if runtime.auto_amp and runtime.scaler is not None:
                runtime.scaler.update()
            for sched in ctx.lr_schedulers:
                for _ in range(sched.steps_after_batch(batch_idx, agg, epoch_len)):
                    sched.step()
        if runtime.profiler is not None:
            runtime.profiler.step()
        return detached(out)

    # Validation ---------------------------------------------------------------------------------

    def _evaluate_full(self, loader: Any) -> dict[str, Any]:
        """On the chief, as Determined does; the other ranks report nothing."""
        if self.dist.rank != 0:
            return {}
        metrics = self.trial.evaluate_full_dataset(loader)
        if not isinstance(metrics, dict):
            raise TypeError("evaluate_full_dataset must return a dict of metrics")
        return metrics

    def _evaluation_outputs(self, loader: Any, test_mode: bool) -> Iterator[dict[str, Any]]:
        ctx, trial = self.context, self.trial
        evaluate: Any = trial.evaluate_batch  # batch_idx is optional in user signatures
        for idx, batch in enumerate(loader):
            if self.runtime.auto_to_device:
                batch = ctx.to_device(batch)
            out = evaluate(batch, idx) if self._eval_with_index else evaluate(batch)
            if not isinstance(out, dict):
                raise TypeError(
                    f"{type(trial).__name__}.evaluate_batch must return a dict of metrics"
                )
            yield out
            if test_mode:
                break

    # Checkpoints --------------------------------------------------------------------------------

    def state_dict(self, rng_state: dict[str, Any]) -> dict[str, Any]:
        ctx, runtime = self.context, self.runtime
        state: dict[str, Any] = {
            "models_state_dict": [_plain_module(m).state_dict() for m in ctx.models],
            "optimizers_state_dict": [o.state_dict() for o in ctx.optimizers],
            "lr_schedulers_state_dict": [s.state_dict() for s in ctx.lr_schedulers],
            "callbacks": self._callback_states(),
            "rng_state": rng_state,
        }
        if runtime.scaler is not None:
            state["scaler_state_dict"] = runtime.scaler.state_dict()
        done = runtime.current_batch_idx
        shuffle = self._shuffle_state(0 if done is None else done + 1)
        if shuffle is not None:
            state["trialkit_shuffle"] = shuffle
        if done is not None and not runtime.is_communicating_batch():
            # Stopped inside a gradient-aggregation window: keep the partial sums so the
            # resumed run takes the same optimizer step as an uninterrupted one.
            state["pending_gradients"] = [
                [None if p.grad is None else p.grad.detach().cpu().clone() for p in m.parameters()]
                for m in ctx.models
            ]
        return state

    def save(self, path: Path, rng_state: dict[str, Any]) -> None:
        state = self.state_dict(rng_state)
        self.hooks.fire("on_checkpoint_save_start", state)
        torch.save(state, path / STATE_DICT)
        # Determined writes both as null when either is missing; trialkit keeps what it has, so
        # a local run without exp_conf can still be rebuilt with its hyperparameters.
        load_data = self._load_data("PyTorchTrial")
        if self.is_trainer:
            load_data["is_trainer"] = True
        (path / LOAD_DATA).write_text(json.dumps(load_data, indent=2, default=str))
        self._copy_code(path / "code")

    def load(self, path: Path) -> dict[str, Any] | None:
        """Restore models, optimizers, schedulers, scaler, callbacks; return the RNG state."""
        found = next((path / f for f in _LEGACY_STATE_FILES if (path / f).exists()), None)
        if found is None:
            raise RuntimeError(f"checkpoint at {path} has no {STATE_DICT}")
        state = torch.load(found, map_location="cpu", weights_only=False)
        self.hooks.fire("on_checkpoint_load_start", state)
        ctx = self.context
        pairs: tuple[tuple[str, str, list[Any], str], ...] = (
            ("models_state_dict", "model_state_dict", ctx.models, "model"),
            ("optimizers_state_dict", "optimizer_state_dict", ctx.optimizers, "optimizer"),
            ("lr_schedulers_state_dict", "lr_scheduler", ctx.lr_schedulers, "LR scheduler"),
        )
        for key, legacy, objects, what in pairs:
            states = _states(state, key, legacy, len(objects), what)
            for obj, s in zip(objects, states, strict=True):
                if what == "model":
                    load_model_state(obj, s)
                else:
                    obj.load_state_dict(s)
        scaler = self.runtime.scaler
        if scaler is not None and "scaler_state_dict" in state:
            scaler.load_state_dict(state["scaler_state_dict"])
        self._shuffle_saved = state.get("trialkit_shuffle")
        for m, grads in zip(ctx.models, state.get("pending_gradients") or [], strict=False):
            for p, g in zip(m.parameters(), grads, strict=True):
                p.grad = None if g is None else g.to(p.device)
        self._load_callback_states(state.get("callbacks", {}))
        return state.get("rng_state")  # type: ignore[no-any-return]
