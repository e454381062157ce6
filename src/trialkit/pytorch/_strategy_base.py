"""What the torch strategies (PyTorchTrial's and DeepSpeedTrial's) share for the shared loop:
the trial's callbacks and their state, torch RNG, the profiler, reducers, the training and
validation loaders' sharding, the validation pass around the trial's own evaluation, and what a
checkpoint carries beside the framework's state (load_data.json, the model code)."""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from .. import _modeldir
from ..harness import Hooks
from ._callback import PyTorchCallback
from ._data import DataLoader
from ._host_metrics import metrics_to_python
from ._reducer import custom_reducer_metrics, reduce_batches, reduce_workers
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


def repeat_forever(loader: Any) -> Iterator[Any]:
    """A loader that is not a trialkit DataLoader, passed over again and again."""
    while True:
        yield from loader


class TorchStrategyBase:
    """The torch half of a loop Strategy. Subclasses step a batch, build the trial's loaders
    (``_build_validation_loader``) and say which data shard is this rank's (``_data_shard``),
    evaluate (``_evaluation_outputs``, ``_evaluate_full``), save and load."""

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

    def metrics_to_python(self, batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return metrics_to_python(batches)

    # Data ---------------------------------------------------------------------------------------

    def _data_shard(self) -> tuple[int, int]:
        """How many shards the data is split into and which is this rank's."""
        raise NotImplementedError

    def _sharded_training(
        self, loader: DataLoader, skip: int, *, same_rng_on_all_ranks: bool
    ) -> tuple[Iterator[Any], int]:
        """This rank's endless pass over a trialkit DataLoader from loader batch ``skip``, and
        its batches per epoch; the shuffle order follows a checkpoint this run continues."""
        replicas, rank = self._data_shard()
        torch_loader = loader.get_data_loader(
            repeat=True,
            skip=skip,
            num_replicas=replicas,
            rank=rank,
            shuffle_seeds=self._pinned_shuffle_seeds(skip),
        )
        self._follow_shuffle(torch_loader, same_rng_on_all_ranks=same_rng_on_all_ranks)
        return iter(torch_loader), len(torch_loader)

    # Validation ---------------------------------------------------------------------------------

    def _build_validation_loader(self) -> Any:
        """The trial's validation loader, checked (None on a rank that builds none)."""
        raise NotImplementedError

    def _validation_loader(self) -> Any:
        """Built once: a trialkit DataLoader becomes one pass over the whole dataset (when the
        trial evaluates it itself) or over this rank's shard."""
        if self._val_loader is None:
            loader = self._build_validation_loader()
            if isinstance(loader, DataLoader):
                if self._full_dataset:
                    loader = loader.get_data_loader(repeat=False)
                else:
                    replicas, rank = self._data_shard()
                    loader = loader.get_data_loader(repeat=False, num_replicas=replicas, rank=rank)
            self._val_loader = loader
        return self._val_loader

    def _evaluation_outputs(self, loader: Any, test_mode: bool) -> Iterator[dict[str, Any]]:
        """The trial's ``evaluate_batch`` outputs on this rank, as dicts of metrics."""
        raise NotImplementedError

    def _reports_metrics(self) -> bool:
        """Whether this rank's evaluation counts (a pipeline's last stage, under DeepSpeed)."""
        return True

    def _evaluate_full(self, loader: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _evaluate_batches(self, loader: Any, test_mode: bool) -> dict[str, Any]:
        """Every rank's ``evaluate_batch`` outputs (the same metrics at every batch), reduced
        by the trial's reducers; the chief gets the combined metrics, the other ranks none."""
        self.hooks.fire("on_validation_epoch_start")
        outputs: list[dict[str, Any]] = []
        keys: set[str] | None = None
        for idx, out in enumerate(self._evaluation_outputs(loader, test_mode)):
            out = {
                k: (v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v)
                for k, v in out.items()
            }
            if keys is None:
                keys = set(out)
            elif set(out) != keys:
                raise ValueError(
                    f"evaluate_batch returned keys {sorted(out)} at batch {idx}, {sorted(keys)} "
                    "before; every batch must return the same metrics"
                )
            outputs.append(out)
        if not outputs:
            raise RuntimeError(f"the validation data loader is empty on rank {self.dist.rank}")
        self.hooks.fire("on_validation_epoch_end", outputs)
        reducers = self.trial.evaluation_reducer()
        mine = (
            (reduce_batches(outputs, reducers), len(outputs))
            if self._reports_metrics()
            else ({}, 0)
        )
        per_worker = self.dist.allgather(mine) if self.dist.size > 1 else [mine]
        return reduce_workers(per_worker, reducers) if self.dist.rank == 0 else {}

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

    def _callback_states(self) -> dict[str, Any]:
        return {name: cb.state_dict() for name, cb in self._callbacks.items()}

    def _load_callback_states(self, saved: dict[str, Any]) -> None:
        """Give each callback its saved state; one with state but none saved is warned about."""
        for name, cb in self._callbacks.items():
            if name in saved:
                cb.load_state_dict(saved[name])
            elif type(cb).load_state_dict is not PyTorchCallback.load_state_dict:
                logger.warning("callback %r has no state in the checkpoint", name)

    def _load_data(self, trial_type: str) -> dict[str, Any]:
        """What load_data.json says of the checkpoint (Determined's file, which
        ``load_trial_from_checkpoint_path`` reads to rebuild the trial)."""
        cls = type(self.trial)
        return {
            "trial_type": trial_type,
            "experiment_config": self.runtime.exp_conf,
            "hparams": self.runtime.hparams,
            "trial_cls_spec": f"{cls.__module__}:{cls.__qualname__}",
        }

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
