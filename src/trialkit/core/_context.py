"""``core.init()`` and ``core.Context``: compose the per-concern contexts over one backend."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .. import storage as storage_lib
from .._home import default_checkpoint_storage, trialkit_home
from ..contract import ClusterInfo, get_cluster_info, local_tensorboard_dir
from ..errors import InvalidHP
from ..storage import tensorboard_prefix
from ._backend import TrialBackend
from ._checkpoint import CheckpointContext
from ._distributed import DistributedContext, DummyDistributedContext
from ._experimental import DummyExperimentalCoreContext, ExperimentalCoreContext
from ._metrics import MetricsShipper
from ._preempt import PreemptContext, PreemptMode
from ._profiler import ProfilerContext
from ._searcher import SearcherContext
from ._tensorboard import EventFileWriter, TensorboardMode
from ._tensorboard_sync import TensorboardSync
from ._train import EarlyExitReason, TrainContext

if TYPE_CHECKING:
    from ..config import SearcherConfig
    from ._local import LocalBackend
    from ._local_run import LocalRun

logger = logging.getLogger("trialkit.core")


class Context:
    """The Core API: ``.checkpoint .distributed .preempt .train .searcher .profiler .info``
    (and Determined's ``.experimental``).

    Use as ``with core.init() as core_context:``. Unlike Determined, leaving the block never
    exits the process: an ``InvalidHP`` raised inside is reported and then suppressed, so the
    script ends normally after the block.
    """

    def __init__(
        self,
        *,
        checkpoint: CheckpointContext,
        distributed: DistributedContext,
        preempt: PreemptContext,
        train: TrainContext,
        searcher: SearcherContext,
        profiler: ProfilerContext,
        info: ClusterInfo | None,
        _backend: TrialBackend,
        _shipper: MetricsShipper,
        _tensorboard: EventFileWriter | None = None,
        _tensorboard_sync: TensorboardSync | None = None,
        experimental: ExperimentalCoreContext | None = None,
    ) -> None:
        self.checkpoint = checkpoint
        self.distributed = distributed
        self.preempt = preempt
        self.train = train
        self.searcher = searcher
        self.profiler = profiler
        self.info = info
        self.experimental = experimental or (
            DummyExperimentalCoreContext() if info is None else ExperimentalCoreContext()
        )
        self._backend = _backend
        self._shipper = _shipper
        self._tensorboard = _tensorboard
        self._tensorboard_sync = _tensorboard_sync
        self._closed = False

    def __enter__(self) -> Context:
        self.preempt.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        suppress = isinstance(exc, InvalidHP)
        if suppress and self.distributed.rank == 0:
            logger.info("InvalidHP raised: reporting an early exit (%s)", exc)
            self.train.report_early_exit(EarlyExitReason.INVALID_HP)
        self.close(None if suppress else exc)
        return suppress

    def close(self, exc: BaseException | None = None) -> None:
        """Stop background work, deliver every queued report, release the backend."""
        if self._closed:
            return
        self._closed = True
        try:
            self.preempt.close()
            self.profiler.off()
            self._shipper.close()
        finally:
            if self._tensorboard is not None:
                self._tensorboard.close()
            if self._tensorboard_sync is not None:
                self._tensorboard_sync.sync()  # the last reports' events
            self.distributed.close()
            self._backend.close(exc)

    def alert(
        self, title: str | None = None, description: str | None = None, level: str = "info"
    ) -> None:
        """Write a highlighted line to the trial's log."""
        if level not in ("info", "warn", "debug", "error"):
            raise ValueError(f"alert level must be info, warn, debug or error, not {level!r}")
        logger.warning("ALERT [%s] %s: %s", level, title or "", description or "")


def _storage_config(
    checkpoint_storage: str | dict[str, Any] | None, *, on_master: bool
) -> dict[str, Any] | None:
    if checkpoint_storage is None:
        return None
    if isinstance(checkpoint_storage, str):
        return storage_lib.from_string(checkpoint_storage)
    if on_master and checkpoint_storage.get("type") == "shared_fs":
        raise ValueError(
            "core.init(checkpoint_storage=...): type shared_fs is not allowed here; use a path string or type directory"
        )
    return dict(checkpoint_storage)


def _distributed_for(
    info: ClusterInfo | None, distributed: DistributedContext | None
) -> DistributedContext:
    """The given context; else the one a launcher's environment describes (with or without a
    master: torchrun's or trialkit's launchers); else a single worker."""
    if distributed is not None:
        return distributed
    found = DistributedContext.from_launcher_env()
    if found is not None:
        return found
    if info is not None and len(info.slot_ids) > 1:
        raise ValueError(
            "you must provide a valid DistributedContext for a multi-slot task: start the "
            "entrypoint with a launcher (python3 -m trialkit.launch.torch_distributed -- "
            "python3 train.py) or pass core.init(distributed=...)"
        )
    return DummyDistributedContext()


def _open_local(
    storage_cfg: dict[str, Any], dist: DistributedContext, run: LocalRun | None = None
) -> LocalBackend:
    """Start the run's journal. With several ranks the chief starts it and records the run;
    the other ranks join it by its key."""
    from ._local import LocalBackend

    if dist.size == 1:
        return LocalBackend.open(storage_cfg, run=run)
    chief = LocalBackend.open(storage_cfg, run=run) if dist.rank == 0 else None
    key = dist.broadcast(chief.key if chief else None)
    return chief or LocalBackend.open(storage_cfg, join=key)


def init(
    *,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | dict[str, Any] | None = None,
    preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
) -> Context:
    """Build a Core API Context: connected to the master when launched by one, else local mode."""
    return build_context(
        distributed=distributed,
        checkpoint_storage=checkpoint_storage,
        preempt_mode=preempt_mode,
        tensorboard_mode=tensorboard_mode,
    )


def build_context(
    *,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | dict[str, Any] | None = None,
    preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
    local_run: LocalRun | None = None,
) -> Context:
    """``init()``, with how a local-mode run is recorded (``core_v2``'s defaults)."""
    info = get_cluster_info()
    dist = _distributed_for(info, distributed)
    home = trialkit_home()
    backend: TrialBackend
    if info is None:
        storage_cfg = _storage_config(
            checkpoint_storage, on_master=False
        ) or default_checkpoint_storage(home)
        storage = storage_lib.build(storage_cfg)
        local = _open_local(storage_cfg, dist, local_run)
        backend = local
        searcher_cfg: Callable[[], SearcherConfig] | None = None
        # named by the run's key; the master moves it to experiment-<id>/trial-<id> once ended
        tb_path = home / "tensorboard" / local_tensorboard_dir(local.key)
    else:
        trial = info.trial
        storage_cfg = _storage_config(checkpoint_storage, on_master=True) or dict(
            trial.config["checkpoint_storage"]
        )
        storage = storage_lib.build(storage_cfg)
        from ..client import MasterClient
        from ._http import HttpBackend

        client = MasterClient(
            info.master_url,
            info.session_token,
            master_file=info.master_file,
            token_from_file=False,
        )
        backend = HttpBackend(client, trial.trial_id, trial.experiment_id, trial.trial_run_id)
        searcher_cfg = lambda: trial.experiment_config.searcher  # noqa: E731  # parsed on first use
        tb_root = Path(info.home) / "tensorboard" if info.home else home / "tensorboard"
        tb_path = tb_root / f"experiment-{backend.experiment_id}" / f"trial-{backend.trial_id}"
    shipper = MetricsShipper(backend)
    tb_writer = tb_sync = None
    if tensorboard_mode == TensorboardMode.AUTO and dist.rank == 0:
        tb_writer = EventFileWriter(tb_path)
        shipper.add_sink(tb_writer.write_reports)
        if info is not None:  # on a cluster AUTO also uploads them, as Determined does
            prefix = tensorboard_prefix(backend.experiment_id, backend.trial_id)
            tb_sync = TensorboardSync(storage, tb_path, prefix)
            shipper.add_sink(tb_sync.sync)
    return Context(
        checkpoint=CheckpointContext(
            dist,
            storage,
            storage_cfg,
            backend,
            require_steps=info is not None,
            after_report=tb_sync.sync if tb_sync is not None else None,
        ),
        distributed=dist,
        preempt=PreemptContext(backend, dist, preempt_mode, watch_master=info is not None),
        train=TrainContext(backend, shipper, dist, tensorboard_mode, tb_path, storage),
        searcher=SearcherContext(backend, dist, searcher_cfg, shipper),
        profiler=ProfilerContext(shipper, dist, info.agent_id if info else "localhost"),
        info=info,
        _backend=backend,
        _shipper=shipper,
        _tensorboard=tb_writer,
        _tensorboard_sync=tb_sync,
    )
