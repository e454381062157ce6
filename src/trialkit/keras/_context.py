"""``TFKerasTrialContext``: hyperparameters, batch sizes and the wrappers a TFKerasTrial calls."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, TypeVar

from .. import core
from ..contract import env_context_for
from ..harness import TrialRuntime, local_context_args
from ._trial import TrialContractError

logger = logging.getLogger("trialkit.keras")

_Ctx = TypeVar("_Ctx", bound="TFKerasTrialContext")


@dataclasses.dataclass
class FitConfig:
    """``context.configure_fit`` settings (Determined's defaults)."""

    verbose: bool = True
    class_weight: dict[int, float] | None = None
    workers: int = 1
    use_multiprocessing: bool = False
    max_queue_size: int = 10
    shuffle: bool = True
    validation_steps: int | None = None


class TFKerasTrialContext:
    """What a TFKerasTrial sees of its trial: config, hyperparameters, distribution."""

    def __init__(
        self,
        core_context: core.Context,
        *,
        hparams: dict[str, Any],
        exp_conf: dict[str, Any],
        trial_seed: int | None = None,
    ) -> None:
        self._core = core_context
        self.distributed = core_context.distributed
        self._hparams = dict(hparams)
        self._exp_conf = dict(exp_conf)
        self._trial_seed = trial_seed
        self.model: Any = None
        self.optimizers: list[Any] = []
        self.fit_config = FitConfig()
        gbs = self._hparams.get("global_batch_size")
        if not isinstance(gbs, int) or isinstance(gbs, bool) or gbs < 1:
            raise TrialContractError(
                f"hyperparameters.global_batch_size: got {gbs!r}; a TFKerasTrial needs a positive "
                "int (the batch size summed over all workers)"
            )
        if gbs % self.distributed.size:
            raise TrialContractError(
                f"hyperparameters.global_batch_size: {gbs} is not divisible by the "
                f"{self.distributed.size} workers"
            )
        self._global_batch_size = gbs
        #: What the harness's strategy shares with this context (harness-internal).
        self.runtime = TrialRuntime(
            exp_conf=self._exp_conf,
            hparams=self._hparams,
            on_cluster=getattr(core_context, "info", None) is not None,
        )
        #: Determined's ``context.env`` (old model code reads and sets its fields).
        self.env = env_context_for(
            getattr(core_context, "info", None),
            hparams=self._hparams,
            experiment_config=self._exp_conf,
            trial_seed=trial_seed,
            debug=bool(self._exp_conf.get("debug", False)),
        )

    @classmethod
    def from_config(cls: type[_Ctx], config: dict[str, Any]) -> _Ctx:
        """Determined's local-mode constructor, for building a TFKerasTrial's model and data
        outside any harness: one worker, no master, nothing recorded; hyperparameters drawn
        once from the config's space."""
        args = local_context_args(config)
        context = cls(
            args["core_context"],
            hparams=args["hparams"],
            exp_conf=args["exp_conf"],
            trial_seed=args["seed"],
        )
        context.env.managed_training = False
        return context

    # Config ---------------------------------------------------------------------------------------

    def get_hparams(self) -> dict[str, Any]:
        return dict(self._hparams)

    def get_hparam(self, name: str) -> Any:
        if name not in self._hparams:
            raise TrialContractError(
                f"hyperparameter {name!r} is not defined; the trial has "
                f"{', '.join(sorted(self._hparams)) or 'none'}"
            )
        return self._hparams[name]

    def get_experiment_config(self) -> dict[str, Any]:
        return dict(self._exp_conf)

    def get_data_config(self) -> dict[str, Any]:
        return dict(self._exp_conf.get("data") or {})

    def get_global_batch_size(self) -> int:
        return self._global_batch_size

    def get_per_slot_batch_size(self) -> int:
        return self._global_batch_size // self.distributed.size

    def get_trial_seed(self) -> int | None:
        return self._trial_seed

    def get_experiment_id(self) -> int:
        info = self._core.info
        return info.trial.experiment_id if info is not None else 0

    def get_trial_id(self) -> int:
        info = self._core.info
        return info.trial.trial_id if info is not None else 0

    # Wrappers -------------------------------------------------------------------------------------

    def wrap_model(self, model: Any) -> Any:
        """Register the model the harness trains; compile it afterwards as usual."""
        if self.model is not None and self.model is not model:
            raise TrialContractError(
                "context.wrap_model was called twice; a TFKerasTrial trains one model"
            )
        self.model = model
        return model

    def wrap_optimizer(self, optimizer: Any) -> Any:
        """Register an optimizer (checkpointed with the model); returned unchanged."""
        self.optimizers.append(optimizer)
        return optimizer

    def wrap_dataset(self, dataset: Any, shard_dataset: bool = True) -> Any:
        """A ``tf.data.Dataset`` sharded across workers (one worker: unchanged)."""
        if shard_dataset and self.distributed.size > 1 and hasattr(dataset, "shard"):
            return dataset.shard(self.distributed.size, self.distributed.rank)
        return dataset

    def configure_fit(
        self,
        verbose: bool | None = None,
        class_weight: Any = None,
        workers: int | None = None,
        use_multiprocessing: bool | None = None,
        max_queue_size: int | None = None,
        shuffle: bool | None = None,
        validation_steps: int | None = None,
    ) -> None:
        """``model.fit`` options; workers/use_multiprocessing/max_queue_size belong to
        ``keras.utils.PyDataset`` in Keras 3, so pass them there (they are kept but unused)."""
        given = {
            "verbose": verbose,
            "class_weight": class_weight,
            "workers": workers,
            "use_multiprocessing": use_multiprocessing,
            "max_queue_size": max_queue_size,
            "shuffle": shuffle,
            "validation_steps": validation_steps,
        }
        for key, value in given.items():
            if value is not None:
                setattr(self.fit_config, key, value)
        if workers is not None or use_multiprocessing is not None or max_queue_size is not None:
            logger.info(
                "configure_fit(workers, use_multiprocessing, max_queue_size): Keras 3 takes "
                "these on keras.utils.PyDataset(workers=..., use_multiprocessing=..., "
                "max_queue_size=...); set them there"
            )
