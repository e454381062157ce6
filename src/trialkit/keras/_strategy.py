"""The Keras strategy for the shared loop: each batch runs the compiled model's own train step
(``train_on_batch``), validation is ``model.evaluate``, checkpoints use Keras 3's native weights
format plus the optimizer's variables."""

from __future__ import annotations

import json
import logging
import pickle
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..harness import Hooks, scalar
from ._callbacks import KerasHooks
from ._context import TFKerasTrialContext
from ._data import TrainingData, batch_length, evaluate
from ._determined import is_determined_layout, load_determined_checkpoint
from ._distributed import MultiWorkerSteps, on_this_worker, scope
from ._keras import keras_module, restore_weights, save_optimizer_state
from ._trial import TFKerasTrial, TrialContractError

logger = logging.getLogger("trialkit.keras")

MODEL_WEIGHTS = "determined-keras-model.weights.h5"
OPTIMIZER_STATE = "determined-keras-optimizer-state.npz"
RNG_STATE = "rng_state.pkl"
LOAD_DATA = "load_data.json"


def _rng_state_variables(model: Any) -> list[Any]:
    """The state of every layer's random generator (dropout and friends), not in the weights:
    Keras 3's SeedGenerators, tf_keras's tf.random.Generator (see seed_all)."""
    out: list[Any] = []
    for layer in model._flatten_layers(include_self=True):
        out.extend(g.state for g in getattr(layer, "_seed_generators", []))
        generator = getattr(getattr(layer, "_random_generator", None), "_generator", None)
        if generator is not None:
            out.append(generator.state)
    return out


class KerasStrategy:
    """Everything the loop needs from a TFKerasTrial and its compiled model."""

    #: The loop's hook dispatcher, handed over by ``use_hooks``.
    hooks: Hooks

    def __init__(
        self, trial: TFKerasTrial, context: TFKerasTrialContext, tf_strategy: Any = None
    ) -> None:
        """``tf_strategy``: the MultiWorkerMirroredStrategy the model was built under, if any."""
        keras = keras_module()

        self.trial = trial
        self.context = context
        self.dist = context.distributed
        model = trial.build_model()
        if context.model is None:
            raise TrialContractError(
                f"{type(trial).__name__}.build_model() did not call context.wrap_model(model); "
                "wrap the model, then compile it"
            )
        if model is not context.model:
            raise TrialContractError(
                f"{type(trial).__name__}.build_model() must return the model passed to "
                "context.wrap_model"
            )
        if getattr(model, "optimizer", None) is None or not getattr(model, "compiled", True):
            raise TrialContractError(
                f"{type(trial).__name__}.build_model(): compile the wrapped model "
                "(model.compile(optimizer=..., loss=...)) before returning it"
            )
        self.model = model
        # Several workers: the model's own steps in strategy.run (see _distributed).
        self._tf_strategy = tf_strategy
        self._steps = MultiWorkerSteps(model, tf_strategy) if tf_strategy is not None else None
        user = list(trial.keras_callbacks() or [])
        self._batch_hooks = bool(user)
        self._cb_list: Any = (
            keras.callbacks.CallbackList(user, add_history=False, add_progbar=False, model=model)
            if user
            else None
        )
        #: The trial's one loop callback, which forwards to the user's Keras callbacks.
        self.keras_callback = KerasHooks(user, self._cb_list)
        self._loop_callbacks = {"keras": self.keras_callback}  # read at every hook fired
        self._data: TrainingData | None = None
        self._validation: Any = None
        self._class_weight = context.fit_config.class_weight

    def callbacks(self) -> dict[str, Any]:
        return self._loop_callbacks

    def use_hooks(self, hooks: Hooks) -> None:
        self.hooks = hooks

    # Data -----------------------------------------------------------------------------------------

    def build_train_iterator(self, skip: int, seed: int) -> tuple[Iterator[Any], int]:
        data = self.trial.build_training_data_loader()
        self._data = TrainingData(
            data,
            self.context.get_per_slot_batch_size(),
            self.dist.rank,
            self.dist.size,
            self.context.fit_config.shuffle,
        )
        return self._data.batches(skip, seed), self._data.epoch_len

    def batch_length(self, batch: Any) -> int:
        return batch_length(batch)

    # Training -------------------------------------------------------------------------------------

    def training_started(self) -> None:
        self.model.stop_training = False

    def training_ended(self) -> None:
        self.hooks.fire("on_training_end")

    def train_batch(
        self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int
    ) -> dict[str, Any]:
        x, y, w = batch
        step = batch_idx % epoch_len
        if self._batch_hooks:
            self.hooks.fire("on_training_batch_start", batch_idx, step)
        if self._steps is not None:
            logs = self._steps.train_batch(x, y, w, self._class_weight)
        elif self._class_weight is not None and w is None:
            logs = self.model.train_on_batch(
                x, y, class_weight=self._class_weight, return_dict=True
            )
        else:
            logs = self.model.train_on_batch(x, y, sample_weight=w, return_dict=True)
        if self._batch_hooks:
            self.hooks.fire("on_training_batch_end", batch_idx, step, logs)
        return logs  # type: ignore[no-any-return]

    def stop_requested(self) -> bool:
        return bool(self.model.stop_training)

    def reset_reducers(self) -> None:
        pass

    def training_reducer_metrics(self) -> dict[str, Any]:
        return {}

    def metrics_to_python(self, batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: scalar(v) for k, v in m.items()} for m in batches]

    # Validation -----------------------------------------------------------------------------------

    def validate(self, test_mode: bool) -> dict[str, Any]:
        steps = 1 if test_mode else self.context.fit_config.validation_steps
        if self._validation is None:
            self._validation = self.trial.build_validation_data_loader()
        if self._steps is not None:
            shard = TrainingData(
                self._validation,
                self.context.get_per_slot_batch_size(),
                self.dist.rank,
                self.dist.size,
                shuffle=False,
            )
            logs = self._steps.evaluate(shard.one_pass(), steps, self._cb_list)
            return self._validated(logs)
        logs = evaluate(
            self.model,
            self._validation,
            self.context.get_per_slot_batch_size(),
            steps,
            self._cb_list,
        )
        return self._validated(logs)

    def _validated(self, logs: Any) -> dict[str, Any]:
        metrics = {f"val_{k}": v for k, v in dict(logs).items()}
        self.hooks.fire("on_validation_end", metrics)
        return metrics

    # RNG ------------------------------------------------------------------------------------------

    def capture_rng(self) -> dict[str, Any]:
        return {
            "np_rng_state": np.random.get_state(),
            "random_rng_state": random.getstate(),
            "keras_seed_generators": on_this_worker(
                self._tf_strategy,
                lambda: [np.asarray(v.numpy()) for v in _rng_state_variables(self.model)],
            ),
        }

    def restore_rng(self, state: dict[str, Any]) -> None:
        missing = [k for k in ("np_rng_state", "random_rng_state") if k not in state]
        if missing:
            raise RuntimeError(
                f"checkpoint rng_state lacks {', '.join(missing)}: cannot resume exactly"
            )
        np.random.set_state(state["np_rng_state"])
        random.setstate(state["random_rng_state"])
        gens = _rng_state_variables(self.model)
        saved = state.get("keras_seed_generators", [])
        if len(saved) != len(gens):
            raise RuntimeError(
                f"checkpoint has {len(saved)} Keras seed generator states; the model has {len(gens)}"
            )
        for g, s in zip(gens, saved, strict=True):
            g.assign(s)

    def fresh_seed(self) -> int:
        return random.randrange(2**31)

    def checkpoint_metadata(self) -> dict[str, Any]:
        keras = keras_module()

        return {"framework": f"keras-{keras.__version__}", "format": "keras_weights"}

    # Checkpoints ----------------------------------------------------------------------------------

    def save(self, path: Path, rng_state: dict[str, Any]) -> None:
        def write() -> None:
            self.model.save_weights(path / MODEL_WEIGHTS)
            save_optimizer_state(self.model.optimizer, path / OPTIMIZER_STATE)

        on_this_worker(self._tf_strategy, write)  # the chief saves alone
        with (path / RNG_STATE).open("wb") as f:
            pickle.dump(rng_state, f)
        (path / "determined-callbacks.v1.pkl").write_bytes(
            pickle.dumps(self.keras_callback.state())
        )
        cls = type(self.trial)
        load_data = {
            "trial_type": "TFKerasTrial",
            "experiment_config": self.context.runtime.exp_conf,
            "hparams": self.context.runtime.hparams,
            "trial_cls_spec": f"{cls.__module__}:{cls.__qualname__}",
        }
        (path / LOAD_DATA).write_text(json.dumps(load_data, indent=2, default=str))
        self.hooks.fire("on_checkpoint_save_end", str(path))

    def load(self, path: Path) -> dict[str, Any] | None:
        """Restore weights and optimizer state; return the RNG state."""
        weights = path / MODEL_WEIGHTS
        if not weights.exists() and is_determined_layout(path):
            # Determined's TFKerasTrial wrote it: weights and optimizer state; its RNG state
            # (TensorFlow's global generator) does not fit Keras's seed generators.
            with scope(self._tf_strategy):
                load_determined_checkpoint(self.model, path)
            return None
        if not weights.exists():
            raise RuntimeError(f"checkpoint at {path} has no {MODEL_WEIGHTS}")
        if not self.model.built:
            raise TrialContractError(
                f"{type(self.trial).__name__}.build_model(): the model is not built, so its "
                "weights cannot be restored; give it a keras.Input (or call model.build)"
            )
        with scope(self._tf_strategy):  # the optimizer may build its variables here
            restore_weights(self.model, weights, path / OPTIMIZER_STATE, f"checkpoint at {path}")
        cb_file = path / "determined-callbacks.v1.pkl"
        if cb_file.exists():
            self.keras_callback.load_state(pickle.loads(cb_file.read_bytes()))
        rng_file = path / RNG_STATE
        if not rng_file.exists():
            return None
        with rng_file.open("rb") as f:
            return pickle.load(f)  # type: ignore[no-any-return]
