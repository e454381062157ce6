"""The DeepSpeed strategy for the shared loop: one loop step is one optimizer step of every
engine (``train_batch`` once per micro batch, or once with pipeline parallelism); checkpoints
are sharded: every rank saves its engines' shards and its own RNG and callback state."""

from __future__ import annotations

import itertools
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from ..harness import average_batches
from ..pytorch import DataLoader
from ..pytorch.shared import (
    TorchStrategyBase,
    detached,
    evaluate_batch_takes_index,
    metrics_to_python,
    repeat_forever,
)
from ._context import DeepSpeedTrialContext
from ._runtime import DeepSpeedRuntime
from ._trial import DeepSpeedTrial, check_trial

logger = logging.getLogger("trialkit.deepspeed")

LOAD_DATA = "load_data.json"


def rank_state_file(rank: int) -> str:
    """Each rank's harness state (callbacks, RNG) in a checkpoint, as Determined names it."""
    return f"det_state_dict_rank{rank}.pth"


def _metrics(out: Any, trial: DeepSpeedTrial, what: str) -> dict[str, Any]:
    if isinstance(out, torch.Tensor):
        return {"loss": out}
    if not isinstance(out, dict):
        raise TypeError(
            f"{type(trial).__name__}.{what} must return a tensor or a dict, got {type(out).__name__}"
        )
    return out


class DeepSpeedStrategy(TorchStrategyBase):
    """Everything the loop needs from a DeepSpeedTrial and its context."""

    trial: DeepSpeedTrial
    context: DeepSpeedTrialContext
    runtime: DeepSpeedRuntime

    def __init__(self, trial: DeepSpeedTrial, context: DeepSpeedTrialContext) -> None:
        check_trial(trial, context)
        super().__init__(trial, context)
        self.mpu = context.mpu
        self._full_dataset = _overrides_full(trial)
        self._eval_with_index = not self._full_dataset and evaluate_batch_takes_index(trial)
        self._calls_per_step = _calls_per_step(context)
        self._micro_batches = context.get_num_micro_batches_per_slot()
        records = context.get_train_micro_batch_size_per_gpu() * self._micro_batches
        # Records per rank and step as the loop counts them (it multiplies by the ranks).
        self._records = records * self.mpu.data_parallel_world_size // max(self.dist.size, 1)

    def checkpoint_metadata(self) -> dict[str, Any]:
        import deepspeed

        return {**super().checkpoint_metadata(), "deepspeed_version": deepspeed.__version__}

    # Data ---------------------------------------------------------------------------------------

    def _built_loader(self, which: str) -> Any:
        """The trial's loader on ranks that need data (None elsewhere), checked."""
        if not self.mpu.should_build_data_loader:
            return None
        loader = getattr(self.trial, f"build_{which}_data_loader")()
        if loader is None or isinstance(loader, DataLoader):
            if isinstance(loader, DataLoader) and which == "training":
                self._check_micro_batch(loader)
            return loader
        if self.runtime.allow_torch_loader:
            return loader
        raise TypeError(
            f"{type(self.trial).__name__}.build_{which}_data_loader() returned a "
            f"{type(loader).__name__}; return a trialkit.pytorch.DataLoader (or None), or call "
            "context.disable_dataset_reproducibility_checks() to use another iterable"
        )

    def _check_micro_batch(self, loader: DataLoader) -> None:
        micro = self.context.get_train_micro_batch_size_per_gpu()
        if loader.batch_size not in (None, micro):
            logger.warning(
                "the training DataLoader's batch_size %s differs from the engine's "
                "train_micro_batch_size_per_gpu %d: each train_batch call pulls one loader batch",
                loader.batch_size,
                micro,
            )

    def build_train_iterator(self, skip: int, seed: int) -> tuple[Iterator[Any], int]:
        """``skip`` is in steps; the loader skips that many steps' micro batches (Determined
        skipped micro batches by the step count under gradient accumulation: a QUIRK)."""
        loader = self._built_loader("training")
        micro_skip = skip * self._micro_batches
        data: Iterator[Any] | None = None
        mine: int | None = None
        if isinstance(loader, DataLoader):
            data, mine = self._sharded_training(loader, micro_skip, same_rng_on_all_ranks=False)
        elif loader is not None:
            mine = len(loader) if hasattr(loader, "__len__") else None
            data = itertools.islice(repeat_forever(loader), micro_skip, None)
        lengths = [n for n in self.dist.allgather(mine) if n is not None]
        epoch_len = max(min(lengths) // self._micro_batches, 1) if lengths else sys.maxsize
        self.runtime.epoch_len = epoch_len
        return itertools.repeat(data), epoch_len

    def _data_shard(self) -> tuple[int, int]:
        return self.mpu.data_parallel_world_size, self.mpu.data_parallel_rank

    def batch_length(self, batch: Any) -> int:
        return self._records

    # Training -----------------------------------------------------------------------------------

    def train_batch(
        self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int
    ) -> dict[str, Any]:
        runtime, trial = self.runtime, self.trial
        runtime.current_batch_idx = batch_idx
        outputs = []
        for _ in range(self._calls_per_step):
            out = _metrics(trial.train_batch(batch, epoch_idx, batch_idx), trial, "train_batch")
            outputs.append(detached(out))
        if self._calls_per_step > 1:
            self._check_steps_taken()
        if runtime.profiler is not None:
            runtime.profiler.step()
        if not self.mpu.should_report_metrics:
            return {}
        return outputs[0] if len(outputs) == 1 else average_batches(metrics_to_python(outputs))

    def _check_steps_taken(self) -> None:
        for i, engine in enumerate(self.context.models):
            if engine.micro_steps % engine.gradient_accumulation_steps() != 0:
                raise RuntimeError(
                    f"engine {i} is not at a gradient accumulation boundary after "
                    f"{self._calls_per_step} train_batch calls: call engine.backward() and "
                    "engine.step() once per train_batch call"
                )

    # Validation ---------------------------------------------------------------------------------

    def _build_validation_loader(self) -> Any:
        return self._built_loader("validation")

    def _evaluate_full(self, loader: Any) -> dict[str, Any]:
        """On every rank, with the unsharded loader (None where none is built): ZeRO-3 and
        pipelines need all ranks in each forward. The first reporting rank's metrics count."""
        mine: dict[str, Any] | None = self.trial.evaluate_full_dataset(loader)
        if not isinstance(mine, dict):
            raise TypeError("evaluate_full_dataset must return a dict of metrics")
        if not self.mpu.should_report_metrics:
            mine = None
        every = self.dist.allgather(mine) if self.dist.size > 1 else [mine]
        first = next((m for m in every if m is not None), {})
        return dict(first) if self.dist.rank == 0 else {}

    def _validation_steps(self, loader: Any) -> int:
        """Validation batches every rank runs: the shortest rank's (pipelines: in steps)."""
        mine = len(loader) if loader is not None and hasattr(loader, "__len__") else None
        lengths = [n for n in self.dist.allgather(mine) if n is not None]
        if not lengths:
            raise RuntimeError(
                "no rank built a validation data loader with a length: return a "
                "trialkit.pytorch.DataLoader from build_validation_data_loader()"
            )
        steps = min(lengths) // (self._micro_batches if self.context.use_pipeline_parallel else 1)
        if steps < 1:
            raise RuntimeError(
                f"the validation data loader has {min(lengths)} batches on some rank; it needs "
                "at least one (pipeline parallelism: one per micro batch of a step)"
            )
        return steps

    def _evaluation_outputs(self, loader: Any, test_mode: bool) -> Iterator[dict[str, Any]]:
        """Every rank runs the same number of steps; one where no loader is built gets None."""
        trial = self.trial
        steps = 1 if test_mode else self._validation_steps(loader)
        data = iter(loader) if loader is not None else None
        evaluate: Any = trial.evaluate_batch  # batch_idx is optional in user signatures
        for idx in range(steps):
            out = evaluate(data, idx) if self._eval_with_index else evaluate(data)
            yield _metrics(out, trial, "evaluate_batch")

    def _reports_metrics(self) -> bool:
        return bool(self.mpu.should_report_metrics)

    # Checkpoints --------------------------------------------------------------------------------

    def save(self, path: Path, rng_state: dict[str, Any]) -> None:
        """Every rank: its harness state, load_data.json and its engines' shards; the chief
        also the model code."""
        state: dict[str, Any] = {
            "callbacks": self._callback_states(),
            "rng_state": rng_state,
            "module_buffers": _module_buffers(self.context.models),
        }
        done = self.runtime.current_batch_idx
        shuffle = self._shuffle_state(0 if done is None else (done + 1) * self._micro_batches)
        if shuffle is not None:
            state["trialkit_shuffle"] = shuffle
        self.hooks.fire("on_checkpoint_save_start", state)
        torch.save(state, path / rank_state_file(self.dist.rank))
        load_data = self._load_data("DeepSpeedTrial")
        (path / LOAD_DATA).write_text(json.dumps(load_data, indent=2, sort_keys=True, default=str))
        if self.dist.rank == 0:
            self._copy_code(path / "code")
        self.trial.save(self.context, path)

    def load(self, path: Path) -> dict[str, Any] | None:
        """Restore the engines, then this rank's callbacks; return its RNG state. A rank the
        checkpoint has no state for (more slots than when saved) takes rank 0's."""
        found = path / rank_state_file(self.dist.rank)
        if not found.exists():
            found = path / rank_state_file(0)
            if not found.exists():
                raise RuntimeError(f"checkpoint at {path} has no {rank_state_file(0)}")
            logger.warning(
                "checkpoint has no state for rank %d; using rank 0's RNG state", self.dist.rank
            )
        state = torch.load(found, map_location="cpu", weights_only=False)
        self.hooks.fire("on_checkpoint_load_start", state)
        self.trial.load(self.context, path)
        _restore_module_buffers(self.context.models, state.get("module_buffers") or [])
        self._shuffle_saved = state.get("trialkit_shuffle")
        self._load_callback_states(state.get("callbacks", {}))
        return state.get("rng_state")  # type: ignore[no-any-return]


def _module_buffers(engines: list[Any]) -> list[dict[str, torch.Tensor]]:
    """This rank's own module buffers (batch-norm statistics) of every engine: DeepSpeed's
    checkpoint holds data-parallel rank 0's only, and ranks that saw other data differ."""
    return [
        {name: b.detach().cpu().clone() for name, b in engine.module.named_buffers()}
        for engine in engines
    ]


def _restore_module_buffers(engines: list[Any], saved: list[dict[str, torch.Tensor]]) -> None:
    with torch.no_grad():
        for engine, buffers in zip(engines, saved, strict=False):
            own = dict(engine.module.named_buffers())
            for name, value in buffers.items():
                if name in own and own[name].shape == value.shape:
                    own[name].copy_(value)


def _calls_per_step(context: DeepSpeedTrialContext) -> int:
    """How many times the harness calls train_batch per step."""
    if context.use_pipeline_parallel or not context.runtime.auto_grad_accumulation:
        return 1
    return context.get_num_micro_batches_per_slot()


def _overrides_full(trial: DeepSpeedTrial) -> bool:
    return type(trial).evaluate_full_dataset is not DeepSpeedTrial.evaluate_full_dataset
