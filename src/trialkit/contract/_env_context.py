"""``EnvContext``: Determined's ``context.env``, the trial's environment as plain attributes that
old model code reads and sets (``context.env.hparams``, ``context.env.container_gpus = []``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._cluster_info import ClusterInfo


class EnvContext:
    """The fields of Determined 0.37's ``det.EnvContext``; every one may be read and set.

    Trialkit's harness reads its own state, not these: setting a field changes what the model
    code sees here and nothing else (``hparams`` is the context's own dict, so an edit to it is
    what ``get_hparams()`` returns too)."""

    def __init__(
        self,
        *,
        master_url: str = "",
        master_cert_file: str | None = None,
        master_cert_name: str | None = None,
        experiment_config: dict[str, Any] | None = None,
        hparams: dict[str, Any] | None = None,
        latest_checkpoint: str | None = None,
        steps_completed: int = 0,
        use_gpu: bool = False,
        container_gpus: list[str] | None = None,
        slot_ids: list[int] | None = None,
        debug: bool = False,
        det_trial_unique_port_offset: int = 0,
        det_trial_id: str = "",
        det_experiment_id: str = "",
        det_agent_id: str = "",
        det_cluster_id: str = "",
        trial_seed: int | None = None,
        trial_run_id: int = 1,
        allocation_id: str = "",
        managed_training: bool = True,
        test_mode: bool = False,
        on_cluster: bool = False,
    ) -> None:
        self.master_url = master_url
        self.master_cert_file = master_cert_file
        self.master_cert_name = master_cert_name
        self.experiment_config = experiment_config if experiment_config is not None else {}
        self.hparams = hparams if hparams is not None else {}
        self.latest_checkpoint = latest_checkpoint
        self.steps_completed = steps_completed
        self.use_gpu = use_gpu
        self.container_gpus = list(container_gpus or [])
        self.slot_ids = list(slot_ids or [])
        self.debug = debug
        self.det_trial_unique_port_offset = det_trial_unique_port_offset
        self.det_trial_id = det_trial_id
        self.det_experiment_id = det_experiment_id
        self.det_agent_id = det_agent_id
        self.det_cluster_id = det_cluster_id
        self.trial_seed = trial_seed
        self.trial_run_id = trial_run_id
        self.allocation_id = allocation_id
        self.managed_training = managed_training
        self.test_mode = test_mode
        self.on_cluster = on_cluster

    def __repr__(self) -> str:
        return f"EnvContext(det_trial_id={self.det_trial_id!r}, hparams={self.hparams!r})"


def env_context_for(
    info: ClusterInfo | None,
    *,
    hparams: dict[str, Any] | None,
    experiment_config: dict[str, Any] | None,
    trial_seed: int | None,
    steps_completed: int = 0,
    use_gpu: bool = False,
    debug: bool = False,
    managed_training: bool = True,
) -> EnvContext:
    """The EnvContext of a trial context: the master's facts when launched by one (ids as
    strings, as Determined had them from env vars), else local-mode blanks."""
    trial = info._trial if info is not None else None
    return EnvContext(
        master_url=info.master_url if info else "",
        master_cert_file=info.master_cert_file if info else None,
        master_cert_name=info.master_cert_name if info else None,
        experiment_config=experiment_config,
        hparams=hparams,
        latest_checkpoint=info.latest_checkpoint if info else None,
        steps_completed=steps_completed,
        use_gpu=use_gpu,
        container_gpus=info.gpu_uuids if info else [],
        slot_ids=info.slot_ids if info else [],
        debug=debug,
        det_trial_id=str(trial.trial_id) if trial else "",
        det_experiment_id=str(trial.experiment_id) if trial else "",
        det_agent_id=info.agent_id if info else "",
        det_cluster_id=info.cluster_id if info else "",
        trial_seed=trial_seed,
        trial_run_id=trial.trial_run_id if trial else 1,
        allocation_id=info.allocation_id if info else "",
        managed_training=managed_training,
        on_cluster=info is not None,
    )
