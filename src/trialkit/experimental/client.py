"""Determined's Python SDK (``determined.experimental.client``) for trialkit's master: create
experiments, wait for them, find their best checkpoints and download them.

It talks to the running master of ``$TRIALKIT_HOME`` (``login()`` arguments are accepted and
ignored: the master is local and its token is in the home)."""

from __future__ import annotations

import base64
import dataclasses
import enum
import sys
import time
from pathlib import Path
from typing import Any

from ..client import MasterClient
from ..storage import (
    CheckpointNotFound,
    CheckpointStorageError,
    StorageConfigError,
    StorageExtraMissing,
)

#: What makes AUTO fall back to the master: this process cannot read the storage itself.
_NO_DIRECT_ACCESS = (CheckpointNotFound, CheckpointStorageError, StorageExtraMissing)


class ExperimentState(enum.Enum):
    """An experiment's state (trialkit's names)."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_ERROR = "STOPPING_ERROR"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"


TERMINAL = {ExperimentState.COMPLETED, ExperimentState.CANCELED, ExperimentState.ERROR}


def _master() -> MasterClient:
    from .._home import trialkit_home
    from ..client import client_for

    home = trialkit_home()
    client = client_for(home)
    if client is None:
        raise RuntimeError(f"no master is running for {home}; start one with 'trialkit master up'")
    return client


def login(master: str | None = None, user: str | None = None, **_: Any) -> None:
    """Accepted for Determined scripts; trialkit's local master needs no login."""


class DownloadMode(enum.Enum):
    """How ``Checkpoint.download`` reaches the files (Determined's names and meanings).

    DIRECT: from the checkpoint storage itself (this process needs access to it). MASTER: from
    the master, which reads the storage and sends a tar.gz (the web UI's download route); for
    a machine without the storage's credentials or mount. AUTO: DIRECT, and MASTER when this
    process cannot reach the storage (not mounted here, credentials or the storage's Python
    package missing); a damaged checkpoint is an error either way."""

    AUTO = "AUTO"
    DIRECT = "DIRECT"
    MASTER = "MASTER"


def _download_mode(mode: DownloadMode | str) -> DownloadMode:
    if isinstance(mode, DownloadMode):
        return mode
    try:
        return DownloadMode(str(mode).upper())
    except ValueError:
        choices = ", ".join(m.name for m in DownloadMode)
        raise ValueError(f"download mode {mode!r} is not one of {choices}") from None


class Checkpoint:
    """A checkpoint: ``uuid``, ``metadata``, ``resources``, ``state``; ``download()``."""

    def __init__(self, record: dict[str, Any], master: MasterClient | None = None) -> None:
        """``record``: the master's checkpoint record; ``master``: the client to use (the CLI
        passes its own; default: the running master of ``$TRIALKIT_HOME``, found per call)."""
        self._record = record
        self._given_master = master
        self.uuid: str = record["uuid"]
        self.metadata: dict[str, Any] = record.get("metadata") or {}
        self.resources: dict[str, int] = record.get("resources") or {}
        self.state: str = record.get("state", "")
        self.trial_id: int = record["trial_id"]
        self.experiment_id: int = record["experiment_id"]
        self.steps_completed: int = record.get("steps_completed", 0)

    def download(
        self, path: str | None = None, mode: DownloadMode | str = DownloadMode.AUTO
    ) -> str:
        """Copy the files to ``path`` (default ``checkpoints/<uuid>``) as ``mode`` says (see
        DownloadMode); returns the path. Every file is checked against the manifest."""
        mode = _download_mode(mode)
        dest = Path(path) if path is not None else Path("checkpoints") / self.uuid
        if mode is DownloadMode.MASTER:
            self._download_through_master(dest)
            return str(dest)
        try:
            self._download_direct(dest)
        except _NO_DIRECT_ACCESS as e:
            if mode is DownloadMode.DIRECT:
                raise
            print(
                f"checkpoint {self.uuid}: no direct access to its storage ({e}); "
                "downloading through the master",
                file=sys.stderr,
            )
            self._download_through_master(dest)
        return str(dest)

    def _master(self) -> MasterClient:
        return self._given_master or _master()

    def _download_direct(self, dest: Path) -> None:
        _experiment_storage(self._master(), self._record).download(self.uuid, dest)

    def _download_through_master(self, dest: Path) -> None:
        _unpack_from_master(self._master(), self.uuid, dest)

    def __repr__(self) -> str:
        return f"Checkpoint(uuid={self.uuid!r}, trial_id={self.trial_id})"


class Trial:
    """A trial: ``id``, ``experiment_id``, ``hparams``; its checkpoints."""

    def __init__(self, trial_id: int) -> None:
        self.id = trial_id
        desc = dataclasses.asdict(_master().describe_trial(trial_id))
        self._desc = desc
        self.experiment_id: int = desc["trial"]["experiment_id"]
        self.hparams: dict[str, Any] = desc["trial"]["hparams"]

    def list_checkpoints(self) -> list[Checkpoint]:
        return [Checkpoint(c) for c in self._desc["checkpoints"] if c["state"] == "COMPLETED"]

    def top_checkpoint(
        self, sort_by: str | None = None, smaller_is_better: bool | None = None
    ) -> Checkpoint:
        """The checkpoint with the best validation ``sort_by`` (default: the searcher metric)."""
        return Experiment(self.experiment_id).top_checkpoint(
            sort_by, smaller_is_better, trial_ids={self.id}
        )


class Experiment:
    """An experiment: ``id``; ``wait()``, lifecycle actions, trials and checkpoints."""

    def __init__(self, experiment_id: int) -> None:
        self.id = int(experiment_id)

    def _describe(self) -> dict[str, Any]:
        return dataclasses.asdict(_master().describe_experiment(self.id))

    @property
    def state(self) -> ExperimentState:
        return ExperimentState(self._describe()["experiment"]["state"])

    def get_config(self) -> dict[str, Any]:
        return self._describe()["experiment"]["config"]  # type: ignore[no-any-return]

    def wait(self, interval: float = 5.0) -> ExperimentState:
        """Block until the experiment ends; returns its final state."""
        while True:
            state = self.state
            if state in TERMINAL:
                return state
            time.sleep(interval)

    def _post(self, action: str) -> None:
        _master().experiment_action(self.id, action)

    def activate(self) -> None:
        self._post("activate")

    def pause(self) -> None:
        self._post("pause")

    def kill(self) -> None:
        self._post("kill")

    def archive(self) -> None:
        self._post("archive")

    def unarchive(self) -> None:
        self._post("unarchive")

    def list_trials(self) -> list[Trial]:
        return [Trial(t["id"]) for t in self._describe()["trials"]]

    get_trials = list_trials

    def list_checkpoints(self) -> list[Checkpoint]:
        return [Checkpoint(c) for c in self._describe()["checkpoints"] if c["state"] == "COMPLETED"]

    def top_checkpoint(
        self,
        sort_by: str | None = None,
        smaller_is_better: bool | None = None,
        *,
        trial_ids: set[int] | None = None,
    ) -> Checkpoint:
        """The checkpoint whose step has the best validation ``sort_by`` (default: the
        searcher metric and its direction)."""
        ranked = self.top_n_checkpoints(1, sort_by, smaller_is_better, trial_ids=trial_ids)
        if not ranked:
            raise ValueError(f"experiment {self.id} has no checkpoint with a validation metric")
        return ranked[0]

    def top_n_checkpoints(
        self,
        limit: int,
        sort_by: str | None = None,
        smaller_is_better: bool | None = None,
        *,
        trial_ids: set[int] | None = None,
    ) -> list[Checkpoint]:
        desc = self._describe()
        searcher = desc["experiment"]["config"].get("searcher") or {}
        metric = sort_by or searcher.get("metric")
        smaller = (
            smaller_is_better
            if smaller_is_better is not None
            else searcher.get("smaller_is_better", True)
        )
        scored = []
        for trial in desc["trials"]:
            if trial_ids is not None and trial["id"] not in trial_ids:
                continue
            tdesc = dataclasses.asdict(_master().describe_trial(trial["id"]))
            by_step = {v["steps_completed"]: v["values"] for v in tdesc["validation_metrics"]}
            for c in tdesc["checkpoints"]:
                value = by_step.get(c["steps_completed"], {}).get(metric)
                if c["state"] == "COMPLETED" and isinstance(value, (int, float)):
                    scored.append((value if smaller else -value, Checkpoint(c)))
        scored.sort(key=lambda pair: pair[0])
        return [c for _, c in scored[:limit]]


def create_experiment(
    config: str | Path | dict[str, Any], model_dir: str | Path | None = None, **_: Any
) -> Experiment:
    """Create an experiment from a config (file or dict) and a model directory."""
    from .._modeldir import entrypoint_check, pack
    from ..config import ConfigError, load_config

    cfg = load_config(config if isinstance(config, dict) else Path(config))
    archive = pack(model_dir or ".")
    missing = entrypoint_check(cfg.entrypoint, archive, f"model directory {model_dir or '.'}")
    if missing:
        raise ConfigError(missing)
    created = _master().create_experiment(
        cfg.as_dict(), model_def=base64.b64encode(archive).decode(), python=sys.executable
    )
    return Experiment(created.experiment.id)


def get_experiment(experiment_id: int) -> Experiment:
    return Experiment(experiment_id)


def get_trial(trial_id: int) -> Trial:
    return Trial(trial_id)


def get_checkpoint(uuid: str) -> Checkpoint:
    return Checkpoint(dataclasses.asdict(_master().get_checkpoint(uuid)))


__all__ = [
    "Checkpoint",
    "DownloadMode",
    "Experiment",
    "ExperimentState",
    "Trial",
    "create_experiment",
    "get_checkpoint",
    "get_experiment",
    "get_trial",
    "login",
]


def _unpack_from_master(client: Any, uuid: str, dest: Path) -> None:
    """The checkpoint's files from the master (which reads its storage) as a tar.gz, unpacked
    into ``dest``; only the checkpoint's own members, with tarfile's data filter."""
    import tarfile
    import tempfile

    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tk-ckpt-archive-") as tmp:
        archive = Path(tmp) / "checkpoint.tar.gz"
        client.download_checkpoint_archive(uuid, archive)
        with tarfile.open(archive, "r:gz") as tar:
            members = []
            for member in tar.getmembers():
                head, _, rest = member.name.partition("/")
                if head == uuid and rest:
                    member.name = rest
                    members.append(member)
            tar.extractall(dest, members=members, filter="data")


def _experiment_storage(client: Any, ckpt: dict[str, Any]) -> Any:
    """The storage the experiment was configured with, if the checkpoint says it is there.

    The location a checkpoint record names was sent by the trial: it is trusted only when it
    is the experiment's configured checkpoint_storage (which its creator wrote). Credentials in
    it stay with the master (served masked): this process uses its own credential chain."""
    from .._secrets import without_masked

    exp = client.experiment_summary(ckpt["experiment_id"]).experiment
    configured = (exp.config or {}).get("checkpoint_storage")
    if not configured:
        raise StorageConfigError(
            f"experiment {exp.id} has no checkpoint_storage; give its directory "
            "(trialkit checkpoint download --storage-path DIR)"
        )
    expected = _buildable_here(exp.id, without_masked(configured))
    reported = _buildable_here(exp.id, without_masked(ckpt["storage"]))
    if _location(reported) != _location(expected):
        raise StorageConfigError(
            f"checkpoint {ckpt['uuid']} was reported in {_location(reported)}, not in experiment "
            f"{exp.id}'s checkpoint storage {_location(expected)}; if you trust that "
            "location, give it with --storage-path"
        )
    return expected


def _buildable_here(experiment_id: int, storage: dict[str, Any]) -> Any:
    """The storage built from its config without the credentials the master keeps; an Azure
    connection string is the only way to the account, so without it this is a storage error."""
    from ..storage import build

    try:
        return build(storage)
    except StorageConfigError as e:
        if storage.get("type") != "azure":
            raise
        raise CheckpointStorageError(
            f"experiment {experiment_id}'s checkpoint storage is reached with a connection "
            "string that the master keeps (it is never sent to clients); download through the "
            "master (the web UI, or Checkpoint.download(mode='MASTER'))"
        ) from e


def _location(manager: Any) -> str:
    return str(manager.location)
