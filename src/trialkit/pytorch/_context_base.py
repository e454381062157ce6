"""What every torch-based Trial context shares (PyTorchTrial's and DeepSpeedTrial's): the
device, hyperparameter and config getters, batch sizes, stop requests, epoch helpers,
reducers, ``to_device``, TensorBoard and the profiler."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from .. import core
from ..contract import env_context_for
from ..harness import local_context_args
from ._data import to_device
from ._reducer import MetricReducer, _SimpleReducer
from ._runtime import TorchRuntime

logger = logging.getLogger("trialkit.pytorch")

_Ctx = TypeVar("_Ctx", bound="TorchContextBase")


class TorchContextBase:
    """The framework-shared half of a torch Trial context; subclasses add how models train."""

    #: The call that builds this context, named in error messages.
    _init_call = "trialkit.pytorch.init()"

    def __init__(
        self,
        core_context: core.Context,
        *,
        hparams: dict[str, Any] | None,
        exp_conf: dict[str, Any] | None = None,
        trial_seed: int | None = None,
        steps_completed: int = 0,
        managed_training: bool = True,
        debug_enabled: bool = False,
        enable_tensorboard_logging: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        self._core = core_context
        self.distributed = core_context.distributed
        self._hparams = hparams
        self._exp_conf = exp_conf
        self._trial_seed = trial_seed
        self._steps_completed = steps_completed
        self._managed_training = managed_training
        self._debug = debug_enabled
        self._enable_tensorboard_logging = enable_tensorboard_logging
        self.device = torch.device(device) if device is not None else self._default_device()
        #: What the harness's strategy shares with this context (harness-internal).
        self.runtime = self._new_runtime(
            exp_conf=exp_conf,
            hparams=hparams,
            on_cluster=getattr(core_context, "info", None) is not None,
        )
        self._tb_writer: Any = None
        self._global_batch_size, self._per_slot_batch_size = self._batch_sizes()
        #: Determined's ``context.env`` (old model code reads and sets its fields).
        self.env = env_context_for(
            getattr(core_context, "info", None),
            hparams=hparams,
            experiment_config=exp_conf,
            trial_seed=trial_seed,
            steps_completed=steps_completed,
            use_gpu=self.device.type == "cuda",
            debug=debug_enabled,
            managed_training=managed_training,
        )

    @classmethod
    def from_config(cls: type[_Ctx], config: dict[str, Any]) -> _Ctx:
        """Determined's local-mode constructor, for poking at a Trial outside any harness: one
        worker, no master, nothing recorded; hyperparameters drawn once from the config's space."""
        args = local_context_args(config)
        return cls(
            args["core_context"],
            hparams=args["hparams"],
            exp_conf=args["exp_conf"],
            trial_seed=args["seed"],
            managed_training=False,
        )

    # Setup --------------------------------------------------------------------------------------

    def _new_runtime(self, **fields: Any) -> TorchRuntime:
        """This context's runtime; a subclass returns its framework's."""
        return TorchRuntime(**fields)

    def _default_device(self) -> torch.device:
        if torch.cuda.is_available():
            index = self.distributed.local_rank if self.distributed.size > 1 else 0
            torch.cuda.set_device(index)
            return torch.device("cuda", index)
        return torch.device("cpu")

    def _batch_sizes(self) -> tuple[int | None, int | None]:
        if not self._hparams or "global_batch_size" not in self._hparams:
            return None, None
        gbs = self._hparams["global_batch_size"]
        if isinstance(gbs, bool) or not isinstance(gbs, int):
            raise ValueError(f"hyperparameters.global_batch_size: expected an int, got {gbs!r}")
        slots = self.distributed.size
        if gbs < slots:
            raise ValueError(
                f"hyperparameters.global_batch_size: {gbs} is smaller than the {slots} workers"
            )
        per_slot = gbs // slots
        if per_slot * slots != gbs:
            logger.warning(
                "global_batch_size %d is not divisible by %d workers; using %d",
                gbs,
                slots,
                per_slot * slots,
            )
        return per_slot * slots, per_slot

    # Hyperparameters and config -----------------------------------------------------------------

    def get_hparams(self) -> dict[str, Any]:
        if self._hparams is None:
            raise ValueError(
                f"this context has no hyperparameters: pass hparams= to {self._init_call}"
            )
        return self._hparams

    def get_hparam(self, name: str) -> Any:
        hparams = self.get_hparams()
        if name not in hparams:
            raise ValueError(
                f"hyperparameter {name!r} is not defined; defined: {', '.join(sorted(hparams))}"
            )
        return hparams[name]

    def get_global_batch_size(self) -> int:
        if self._global_batch_size is None:
            raise ValueError("global_batch_size is not a hyperparameter of this trial")
        return self._global_batch_size

    def get_per_slot_batch_size(self) -> int:
        if self._per_slot_batch_size is None:
            raise ValueError("global_batch_size is not a hyperparameter of this trial")
        return self._per_slot_batch_size

    def get_experiment_config(self) -> dict[str, Any]:
        if self._exp_conf is None:
            raise ValueError("this context has no experiment config: pass exp_conf= to init()")
        return self._exp_conf

    def get_data_config(self) -> dict[str, Any]:
        return dict(self.get_experiment_config().get("data") or {})

    def get_experiment_id(self) -> int:
        info = self._core.info
        if info is None:
            raise RuntimeError("get_experiment_id(): not running under a master")
        return info.trial.experiment_id

    def get_trial_id(self) -> int:
        info = self._core.info
        if info is None:
            raise RuntimeError("get_trial_id(): not running under a master")
        return info.trial.trial_id

    def get_trial_seed(self) -> int:
        if self._trial_seed is None:
            raise RuntimeError("get_trial_seed(): this context has no trial seed (local mode)")
        return self._trial_seed

    def get_initial_batch(self) -> int:
        return self._steps_completed

    def get_stop_requested(self) -> bool:
        return self.runtime.stop_requested

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Ask the harness to finish this batch, checkpoint and return from fit()."""
        if not isinstance(stop_requested, bool):
            raise TypeError("set_stop_requested() takes a bool")
        self.runtime.stop_requested = stop_requested

    # Epoch helpers ------------------------------------------------------------------------------

    def _need_position(self, call: str) -> tuple[int, int]:
        position, epoch_len = self.runtime.current_batch_idx, self.runtime.epoch_len
        if position is None or epoch_len is None:
            raise RuntimeError(f"{call}: training has not started")
        return position, epoch_len

    def current_train_batch(self) -> int:
        return self._need_position("current_train_batch()")[0]

    def current_train_epoch(self) -> int:
        b, n = self._need_position("current_train_epoch()")
        return b // n

    def is_epoch_start(self) -> bool:
        b, n = self._need_position("is_epoch_start()")
        return b % n == 0

    def is_epoch_end(self) -> bool:
        b, n = self._need_position("is_epoch_end()")
        return b % n == n - 1

    # Reducers and data --------------------------------------------------------------------------

    def wrap_reducer(
        self,
        reducer: MetricReducer | Callable[[list[Any]], Any],
        name: str | None = None,
        for_training: bool = True,
        for_validation: bool = True,
    ) -> MetricReducer:
        """Register a custom metric reducer (or a function over all values)."""
        if any(r is reducer for r, *_ in self.runtime.reducers):
            raise ValueError("wrap_reducer(): this reducer is already wrapped")
        wrapped = reducer if isinstance(reducer, MetricReducer) else _SimpleReducer(reducer)
        self.runtime.reducers.append((wrapped, name, for_training, for_validation))
        return wrapped

    def to_device(self, data: Any) -> Any:
        """Move the tensors in ``data`` to this worker's device (numpy arrays become tensors)."""
        return to_device(data, self.device, self.runtime.warned_types)

    # Tensorboard and profiler -------------------------------------------------------------------

    def get_tensorboard_path(self) -> Any:
        return self._core.train.get_tensorboard_path()

    def get_tensorboard_writer(self) -> Any:
        """A torch SummaryWriter writing into the trial's TensorBoard directory."""
        if self._tb_writer is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as e:
                raise RuntimeError(
                    f"get_tensorboard_writer() needs the tensorboard package ({e}); pip install tensorboard"
                ) from None
            self._tb_writer = SummaryWriter(str(self.get_tensorboard_path()))
        return self._tb_writer

    def set_enable_tensorboard_logging(self, enable: bool) -> None:
        self._enable_tensorboard_logging = bool(enable)

    def get_enable_tensorboard_logging(self) -> bool:
        return self._enable_tensorboard_logging

    def set_profiler(self, *args: Any, **kwargs: Any) -> None:
        """A torch.profiler.profile entered around training and stepped after each batch."""
        kwargs.setdefault(
            "on_trace_ready",
            torch.profiler.tensorboard_trace_handler(str(self.get_tensorboard_path())),
        )
        self.runtime.profiler = torch.profiler.profile(*args, **kwargs)
