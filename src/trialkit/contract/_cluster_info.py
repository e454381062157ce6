"""ClusterInfo / TrialInfo: what a trial process knows about itself, read from the info file
the master writes (``$TRIALKIT_CLUSTER_INFO``) or Determined's ``/run/determined/info`` layout."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trialkit.config import ExperimentConfig

INFO_ENV = "TRIALKIT_CLUSTER_INFO"
_DETERMINED_INFO_DIR = Path("/run/determined/info")


class TrialInfo:
    """The trial-specific part of ClusterInfo."""

    def __init__(
        self,
        trial_id: int,
        experiment_id: int,
        trial_seed: int,
        hparams: dict[str, Any],
        config: dict[str, Any],
        steps_completed: int,
        trial_run_id: int,
        debug: bool = False,
        inter_node_network_interface: str | None = None,
    ) -> None:
        self.trial_id = trial_id
        self.experiment_id = experiment_id
        self.trial_seed = trial_seed
        self.hparams = hparams
        self._config = config
        self._steps_completed = steps_completed
        self._trial_run_id = trial_run_id
        self._debug = debug
        self._inter_node_network_interface = inter_node_network_interface
        self._typed: ExperimentConfig | None = None

    @property
    def config(self) -> dict[str, Any]:
        """The fully-defaulted experiment config as JSON data (Determined's ``_config``)."""
        return self._config

    @property
    def experiment_config(self) -> ExperimentConfig:
        """The typed, frozen experiment config, parsed from ``config`` on first use: trialkit's
        own readers take every value (and default) from it."""
        if self._typed is None:
            from trialkit.config import ConfigError, parse_config

            try:
                self._typed = parse_config(self._config)
            except ConfigError as e:
                raise RuntimeError(
                    f"cluster info: the experiment config of trial {self.trial_id} does not "
                    f"parse ({'; '.join(e.errors)}); the master that started it writes a valid "
                    "one, so check that trial and master run the same trialkit"
                ) from None
        return self._typed

    @property
    def steps_completed(self) -> int:
        return self._steps_completed

    @property
    def trial_run_id(self) -> int:
        return self._trial_run_id

    @classmethod
    def _from_json(cls, d: dict[str, Any]) -> TrialInfo:
        return cls(
            trial_id=int(d["trial_id"]),
            experiment_id=int(d["experiment_id"]),
            trial_seed=int(d["trial_seed"]),
            hparams=d.get("hparams") or {},
            config=d.get("config") or {},
            steps_completed=int(d.get("steps_completed") or 0),
            trial_run_id=int(d.get("trial_run_id") or 0),
            debug=bool(d.get("debug", False)),
            inter_node_network_interface=d.get("inter_node_network_interface"),
        )

    def _to_json(self) -> dict[str, Any]:
        return {
            "trial_id": self.trial_id,
            "experiment_id": self.experiment_id,
            "trial_seed": self.trial_seed,
            "hparams": self.hparams,
            "config": self._config,
            "steps_completed": self._steps_completed,
            "trial_run_id": self._trial_run_id,
            "debug": self._debug,
            "inter_node_network_interface": self._inter_node_network_interface,
        }


class RendezvousInfo:
    """Where the containers of a task run (Determined's ``rendezvous.json``): their addresses
    and slot counts, ordered by rank, and this container's rank."""

    def __init__(
        self, container_addrs: list[str], container_rank: int, container_slot_counts: list[int]
    ) -> None:
        self.container_addrs = container_addrs
        self.container_rank = container_rank
        self.container_slot_counts = container_slot_counts


class ResourcesInfo:
    """The devices given to this container (Determined's ``resources.json``)."""

    def __init__(self, gpu_uuids: list[str]) -> None:
        self._gpu_uuids = gpu_uuids

    @property
    def gpu_uuids(self) -> list[str]:
        return self._gpu_uuids


class ClusterInfo:
    """Everything the master tells a task about where and how it runs."""

    def __init__(
        self,
        *,
        master_url: str,
        cluster_id: str,
        agent_id: str,
        slot_ids: list[int],
        task_id: str,
        allocation_id: str,
        session_token: str,
        task_type: str = "TRIAL",
        master_cert_name: str | None = None,
        master_cert_file: str | None = None,
        latest_checkpoint: str | None = None,
        trial: TrialInfo | None = None,
        container_addrs: list[str] | None = None,
        container_rank: int = 0,
        master_file: str | None = None,
        home: str | None = None,
        rendezvous_info: RendezvousInfo | None = None,
        resources_info: ResourcesInfo | None = None,
    ) -> None:
        self.master_url = master_url
        self.cluster_id = cluster_id
        self.agent_id = agent_id
        self.slot_ids = slot_ids
        self.task_id = task_id
        self.allocation_id = allocation_id
        self.session_token = session_token
        self.task_type = task_type
        self.master_cert_name = master_cert_name
        self.master_cert_file = master_cert_file
        self._latest_checkpoint = latest_checkpoint
        self._trial = trial
        addrs = container_addrs or ["127.0.0.1"]
        self._rendezvous_info = rendezvous_info or RendezvousInfo(
            addrs, container_rank, [len(slot_ids)] * len(addrs)
        )
        self._resources_info = resources_info or ResourcesInfo([])
        self.master_file = master_file
        self.home = home

    @property
    def latest_checkpoint(self) -> str | None:
        """The trial's checkpoint with the most steps_completed, chosen by the master."""
        return self._latest_checkpoint if self.task_type == "TRIAL" else None

    @property
    def trial(self) -> TrialInfo:
        if self._trial is None:
            raise RuntimeError(
                f"ClusterInfo.trial is only available for TRIAL tasks, not {self.task_type}"
            )
        return self._trial

    @property
    def user_data(self) -> dict[str, Any]:
        """The experiment config's ``data`` section."""
        if self._trial is None:
            return {}
        return dict(self._trial.experiment_config.data)

    @property
    def rendezvous_info(self) -> RendezvousInfo:
        return self._rendezvous_info

    @property
    def resources_info(self) -> ResourcesInfo:
        return self._resources_info

    @property
    def container_addrs(self) -> list[str]:
        return list(self._rendezvous_info.container_addrs)

    @property
    def container_slot_counts(self) -> list[int]:
        return list(self._rendezvous_info.container_slot_counts)

    @property
    def container_rank(self) -> int:
        return self._rendezvous_info.container_rank

    @property
    def gpu_uuids(self) -> list[str]:
        return list(self._resources_info.gpu_uuids)

    @classmethod
    def _from_json(cls, d: dict[str, Any]) -> ClusterInfo:
        trial = d.get("trial")
        return cls(
            master_url=d["master_url"],
            cluster_id=d.get("cluster_id", "trialkit"),
            agent_id=d.get("agent_id", "localhost"),
            slot_ids=list(d.get("slot_ids") or []),
            task_id=d.get("task_id", ""),
            allocation_id=d.get("allocation_id", ""),
            session_token=d.get("session_token", ""),
            task_type=d.get("task_type", "TRIAL"),
            master_cert_name=d.get("master_cert_name"),
            master_cert_file=d.get("master_cert_file"),
            latest_checkpoint=d.get("latest_checkpoint"),
            trial=TrialInfo._from_json(trial) if trial else None,
            container_addrs=d.get("container_addrs"),
            container_rank=int(d.get("container_rank", 0)),
            master_file=d.get("master_file"),
            home=d.get("home"),
            rendezvous_info=RendezvousInfo(**d["rendezvous"]) if d.get("rendezvous") else None,
            resources_info=ResourcesInfo(**d["resources"]) if d.get("resources") else None,
        )

    def _to_json(self) -> dict[str, Any]:
        return {
            "master_url": self.master_url,
            "cluster_id": self.cluster_id,
            "agent_id": self.agent_id,
            "slot_ids": self.slot_ids,
            "task_id": self.task_id,
            "allocation_id": self.allocation_id,
            "session_token": self.session_token,
            "task_type": self.task_type,
            "master_cert_name": self.master_cert_name,
            "master_cert_file": self.master_cert_file,
            "latest_checkpoint": self._latest_checkpoint,
            "trial": self._trial._to_json() if self._trial else None,
            "container_addrs": self.container_addrs,
            "container_rank": self.container_rank,
            "resources": {"gpu_uuids": self.gpu_uuids},
            "master_file": self.master_file,
            "home": self.home,
        }


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError) as e:
        raise RuntimeError(f"cannot read cluster info {path}: {e}") from e


def _from_determined_dir(root: Path) -> ClusterInfo:
    d = _read_json(root / "cluster.json")
    trial_file = root / "trial.json"
    if trial_file.exists():
        t = _read_json(trial_file)
        d["trial"] = {k.lstrip("_"): v for k, v in t.items()}
    for name in ("rendezvous", "resources"):
        if (root / f"{name}.json").exists():
            d[name] = {k.lstrip("_"): v for k, v in _read_json(root / f"{name}.json").items()}
    return ClusterInfo._from_json(d)


def get_cluster_info() -> ClusterInfo | None:
    """The running task's ClusterInfo, or None when not launched by a master (local mode)."""
    path = os.environ.get(INFO_ENV)
    if path:
        return ClusterInfo._from_json(_read_json(Path(path)))
    if (_DETERMINED_INFO_DIR / "cluster.json").exists():
        return _from_determined_dir(_DETERMINED_INFO_DIR)
    return None
