"""What the torch strategies (PyTorchTrial's and DeepSpeedTrial's) share for the shared loop:
the trial's callbacks, torch RNG, the profiler, reducers, the validation pass around the trial's
own evaluation, and the model code a checkpoint carries."""

from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path
from typing import Any

import torch

from .. import _modeldir
from ..harness import Hooks
from ._callback import PyTorchCallback
from ._reducer import custom_reducer_metrics
from ._rng import capture_rng, restore_rng
from ._runtime import TorchRuntime
from ._samplers import TorchRandomSampler, find_shuffle_sampler

logger = logging.getLogger("trialkit.pytorch")


def model_dir_for(trial: object, on_cluster: bool) -> Path | None:
    """Code to copy into checkpoints: the trial's working directory under the master, else the
    directory of the module defining the Trial class."""
    if on_cluster:
        return Path.cwd()
    module = sys.modules.get(type(trial).__module__)
    file = getattr(module, "__file__", None)
    return Path(file).resolve().parent if file else None


def build_callbacks(trial: Any) -> dict[str, PyTorchCallback]:
    """The trial's ``build_callbacks()``, checked; deprecated hooks are warned about once."""
    cbs = trial.build_callbacks()
    if not isinstance(cbs, dict):
        raise TypeError(
            f"{type(trial).__name__}.build_callbacks() must return a dict of name -> PyTorchCallback"
        )
    for name, cb in cbs.items():
        if type(cb).on_checkpoint_end is not PyTorchCallback.on_checkpoint_end:
            warnings.warn(
                f"callback {name!r} overrides on_checkpoint_end, which is deprecated; "
                "use on_checkpoint_write_end",
                FutureWarning,
                stacklevel=3,
            )
    return cbs


class TorchStrategyBase:
    """The torch half of a loop Strategy. Subclasses step a batch, build loaders, evaluate
    (``_evaluate_batches``, ``_evaluate_full``), save and load."""

    _full_dataset: bool  # set by the subclass: the trial evaluates the full dataset itself
    #: What the context shares with the strategy (the strategy reads nothing else of its state).
    runtime: TorchRuntime
    #: The loop's hook dispatcher, handed over by ``use_hooks``.
    hooks: Hooks

    def __init__(self, trial: Any, context: Any) -> None:
        self.trial = trial
        self.context = context
        self.runtime = context.runtime
        self.device = context.device
        self.dist = context.distributed
        self._callbacks = build_callbacks(trial)
        self._val_loader: Any = None
        self._profiler_on = False
        self._shuffle: TorchRandomSampler | None = None
        self._shuffle_saved: dict[str, Any] | None = None

    def callbacks(self) -> dict[str, Any]:
        return self._callbacks

    def use_hooks(self, hooks: Hooks) -> None:
        self.hooks = hooks

    # RNG and metadata ---------------------------------------------------------------------------

    def capture_rng(self) -> dict[str, Any]:
        return capture_rng(self.device)

    def restore_rng(self, state: dict[str, Any]) -> None:
        restore_rng(state, self.device)

    def fresh_seed(self) -> int:
        return int(torch.initial_seed()) % 2**31

    def checkpoint_metadata(self) -> dict[str, Any]:
        return {"framework": f"torch-{torch.__version__}", "format": "pickle"}

    # Training -----------------------------------------------------------------------------------

    def _settle_gradients(self) -> None:
        """Before validation and at the end of training (PyTorchTrial frees retired grads)."""

    def training_started(self) -> None:
        for m in self.context.models:
            m.train()
        if self.runtime.profiler is not None:
            self.runtime.profiler.__enter__()
            self._profiler_on = True

    def training_ended(self) -> None:
        self._settle_gradients()
        if self._profiler_on:
            self.runtime.profiler.__exit__(None, None, None)
            self._profiler_on = False

    def stop_requested(self) -> bool:
        return bool(self.runtime.stop_requested)

    # Reducers -----------------------------------------------------------------------------------

    def reset_reducers(self) -> None:
        for r, *_ in self.runtime.reducers:
            r.reset()

    def training_reducer_metrics(self) -> dict[str, Any]:
        return custom_reducer_metrics(self.runtime.reducers, self.dist, training=True)

    # Validation ---------------------------------------------------------------------------------

    def _validation_loader(self) -> Any:
        raise NotImplementedError

    def _evaluate_batches(self, loader: Any, test_mode: bool) -> dict[str, Any]:
        raise NotImplementedError

    def _evaluate_full(self, loader: Any) -> dict[str, Any]:
        raise NotImplementedError

    def validate(self, test_mode: bool) -> dict[str, Any]:
        """Models in eval mode, callbacks told, the trial's evaluation, reducers added; the
        metrics go to every rank when a callback reads them in on_validation_end."""
        ctx = self.context
        self._settle_gradients()
        for m in ctx.models:
            m.eval()
        self.reset_reducers()
        self.hooks.fire("on_validation_start")
        loader = self._validation_loader()
        with torch.no_grad():
            if self._full_dataset:
                metrics = self._evaluate_full(loader)
            else:
                metrics = self._evaluate_batches(loader, test_mode)
        metrics.update(custom_reducer_metrics(self.runtime.reducers, self.dist, training=False))
        if self.dist.size > 1 and any(
            type(cb).on_validation_end is not PyTorchCallback.on_validation_end
            for cb in self._callbacks.values()
        ):
            metrics = self.dist.broadcast(metrics)
        self.hooks.fire("on_validation_end", metrics)
        for m in ctx.models:
            m.train()
        return metrics

    # Shuffle order across a resume --------------------------------------------------------------

    def _pinned_shuffle_seeds(self, skip: int) -> dict[int, int] | None:
        """The pass seeds the checkpoint this run continues kept (None: not continuing one of
        trialkit's, e.g. a fresh start, a warm start or a Determined checkpoint, where the
        passes draw from the restored global RNG as in Determined)."""
        saved = self._shuffle_saved
        if saved is None or saved.get("skip") != skip:
            return None
        return {int(k): int(v) for k, v in saved["seeds"].items()}

    def _follow_shuffle(self, torch_loader: Any, *, same_rng_on_all_ranks: bool) -> None:
        """Remember the training loader's shuffle sampler. ``same_rng_on_all_ranks`` (every
        rank calls this, a collective): give the ranks the chief's global torch RNG, so they
        draw the same permutations (a no-op when the trial seed seeded them all)."""
        self._shuffle = find_shuffle_sampler(getattr(torch_loader, "batch_sampler", None))
        if same_rng_on_all_ranks and self._shuffle is not None and self.dist.size > 1:
            torch.random.set_rng_state(self.dist.broadcast(torch.random.get_rng_state()))

    def _shuffle_state(self, next_batch: int) -> dict[str, Any] | None:
        """What a checkpoint keeps: the seeds of the recent passes and the loader batch the
        resumed run starts at (``skip``)."""
        if self._shuffle is None or not self._shuffle.seeds:
            return None
        return {"skip": next_batch, "seeds": dict(self._shuffle.seeds)}

    # Checkpoints --------------------------------------------------------------------------------

    def _copy_code(self, dest: Path) -> None:
        src = model_dir_for(self.trial, self.runtime.on_cluster)
        if src is None:
            return
        try:
            _modeldir.unpack(_modeldir.pack(src), dest)
        except _modeldir.ModelDirError as e:
            logger.warning("checkpoint code/ left out: %s", e)
            return
        dest.chmod(0o755)
