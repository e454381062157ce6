"""Turn a submitted config into the stored, fully-defaulted experiment config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import __version__
from ..._home import default_checkpoint_storage
from ..._install import pip_install_command
from ..._modeldir import entrypoint_check
from ...config import (
    LOCAL_POOL,
    ExperimentConfig,
    MasterConfig,
    entrypoint_kind,
    parse_config,
    with_defaults,
)
from ...storage import CheckpointStorageError, StorageConfigError, build
from ...store import Store
from ..runs._bind_mounts import bind_mount_errors
from ..runs._pools import capacity_errors, check_resource_pool
from ._warm_start import WarmStartError, resolve_warm_start, storage_of


class CreateError(ValueError):
    """The experiment cannot run on this master."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


def _trial_class_length(cfg: ExperimentConfig) -> list[str]:
    """A Trial class trains for the searcher's length, so that length needs a unit."""
    searcher = cfg.searcher
    length = searcher.max_length
    if (length is not None and length.unit is not None) or searcher.max_time is not None:
        return []  # time_metric comes with max_time (the config model checks)
    if searcher.name == "custom" and length is None:
        if searcher.unit is not None:
            return []  # 0.26-0.37: the search method's operations give lengths in this unit
        return [
            f"entrypoint: {cfg.entrypoint!r} is a Trial class, which trains for the lengths of "
            "the custom searcher's operations, but they have no unit; add searcher.unit: "
            "batches (or records / epochs)"
        ]
    got = f"max_length {length} has no unit" if length else "it has no training length"
    return [
        f"entrypoint: {cfg.entrypoint!r} is a Trial class, which trains for the searcher's "
        f"length, but {got}; give searcher.max_length as {{batches|records|epochs: N}} or "
        "searcher.time_metric + max_time"
    ]


#: Linux's MAX_ARG_STRLEN: the most one environment variable ("NAME=value" and its NUL) may
#: hold. Each trial gets the whole config as DET_EXPERIMENT_CONFIG, so a bigger config could
#: never start a trial (execve fails with "Argument list too long").
MAX_ENV_STRING = 128 * 2**10
_CONFIG_ENV = "DET_EXPERIMENT_CONFIG"


def _check_env_sizes(cfg: ExperimentConfig) -> list[str]:
    """Every value a trial receives through one environment variable must fit in it."""
    errors = []
    size = len(f"{_CONFIG_ENV}={json.dumps(cfg.as_dict())}".encode()) + 1
    if size > MAX_ENV_STRING:
        errors.append(
            f"config: {size / 2**10:.0f} KiB as JSON, over the {MAX_ENV_STRING // 2**10} KiB a "
            f"trial's environment variable {_CONFIG_ENV} can hold; move large values "
            "(data, long lists) into files in the model directory"
        )
    for item in cfg.environment.every_variable():
        if len(item.encode()) + 1 > MAX_ENV_STRING:
            name = item.partition("=")[0][:40]
            errors.append(
                f"environment.environment_variables: {name!r} is over the "
                f"{MAX_ENV_STRING // 2**10} KiB one environment variable can hold"
            )
    return errors


def _check_runnable(cfg: ExperimentConfig, slots: int | None) -> list[str]:
    """Errors that stop the trials from starting at all (``slots`` None: not a local pool)."""
    errors = []
    kind = entrypoint_kind(cfg.entrypoint)
    if kind == "none":
        errors.append(
            "entrypoint: missing; give the command that starts training, e.g. 'python3 train.py'"
        )
    elif kind == "trial_class":
        errors.extend(_trial_class_length(cfg))
    errors += bind_mount_errors(cfg.bind_mounts)
    need = cfg.resources.slots_per_trial
    if slots is not None and need > slots:
        errors.append(
            f"resources.slots_per_trial: {need} is more than this master's {slots} slots; "
            "lower it or start the master with more (trialkit master up --slots N)"
        )
    return errors


#: Interpreters that imported trialkit, by (path, inode, mtime): the trialkit version they have.
_RUNNABLE: dict[tuple[str, int, int], str] = {}
_RUNNABLE_LOCK = threading.Lock()
_PROBE = "import trialkit; print(trialkit.__version__)"


def _probe_interpreter(python: str) -> tuple[str | None, str]:
    """(trialkit version, '') when ``python`` runs and imports trialkit, else (None, why not)."""
    try:
        st = os.stat(python)
    except OSError:
        return None, "does not exist on the master's machine"
    if not os.access(python, os.X_OK) or not os.path.isfile(python):
        return None, "is not an executable file"
    key = (python, st.st_ino, st.st_mtime_ns)
    with _RUNNABLE_LOCK:
        if key in _RUNNABLE:
            return _RUNNABLE[key], ""
    try:
        out = subprocess.run(
            [python, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"cannot be run ({e})"
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or [f"exit code {out.returncode}"])[-1]
        return (
            None,
            f"cannot import trialkit ({last}); install it there: {pip_install_command(python)}",
        )
    version = out.stdout.strip()
    with _RUNNABLE_LOCK:
        _RUNNABLE[key] = version  # only successes: a venv fixed later is probed again
    return version, ""


def _check_interpreter(cfg: ExperimentConfig, from_config: bool) -> tuple[list[str], list[str]]:
    """(errors, warnings) about the interpreter the experiment's trials will run with."""
    python = cfg.environment.python
    assert python is not None  # with_defaults filled it in
    if python == sys.executable:
        return [], []
    where = (
        "environment.python"
        if from_config
        else "python (the interpreter 'trialkit experiment create' ran with)"
    )
    version, problem = _probe_interpreter(python)
    if version is None:
        return [f"{where}: {python} {problem}"], []
    if version != __version__:
        return [], [f"{where}: {python} has trialkit {version}; this master runs {__version__}"]
    return [], []


def _anchor_relative_storage(cfg: ExperimentConfig, home: Path) -> ExperimentConfig:
    """A relative shared_fs host_path (or directory container_path) is taken relative to the
    master's home, fixed here once: a trial runs in a working copy deleted on relaunch, so a
    path relative to it would lose every checkpoint at the first restart."""
    storage = cfg.checkpoint_storage
    key = {"shared_fs": "host_path", "directory": "container_path"}.get(
        str(storage and storage.type)
    )
    value = getattr(storage, key, None) if key else None
    if storage is None or key is None or not value:
        return cfg
    path = Path(os.path.expanduser(str(value)))
    if path.is_absolute():
        return cfg
    anchored = storage.model_copy(update={key: str(home / path)})
    return cfg.model_copy(update={"checkpoint_storage": anchored})


def _resolve_pool(
    cfg: ExperimentConfig, master: MasterConfig
) -> tuple[list[str], ExperimentConfig]:
    """``check_resource_pool``'s errors, and ``cfg`` naming the pool it resolved to."""
    errors, pool = check_resource_pool(cfg, master)
    if errors or pool == cfg.resources.resource_pool:
        return errors, cfg
    resources = cfg.resources.model_copy(update={"resource_pool": pool})
    return errors, cfg.model_copy(update={"resources": resources})


def prepare_experiment(
    raw: dict[str, Any],
    slots: int,
    home: Path,
    python: str | None = None,
    model_def: bytes | None = None,
    store: Store | None = None,
    warm_start_path: str | None = None,
    master_config: MasterConfig | None = None,
    pool_capacity: Callable[[str], int | None] | None = None,
) -> tuple[ExperimentConfig, list[str]]:
    """Validate, fill the seed, checkpoint storage and interpreter; return (config, warnings).

    ``python`` is the creating client's interpreter; ``environment.python`` in the config wins
    over it, and the master's own interpreter is used when neither is given. ``model_def`` is
    the packed model directory the entrypoint's script or Trial class must be found in.
    With a ``store``, the warm-start source (``searcher.source_checkpoint_uuid`` /
    ``source_trial_id``, or ``warm_start_path``) is checked and made reachable for the trials.
    ``master_config`` holds the resource pools ``resources.resource_pool`` may name, and
    ``pool_capacity`` tells the slots a (Ray) pool has now.
    """
    parsed = parse_config(raw)
    from_config = parsed.environment.python is not None
    filled = with_defaults(
        parsed,
        experiment_seed=int(time.time()) % 2**32,
        checkpoint_storage=default_checkpoint_storage(home),
        python=python or sys.executable,
    )
    cfg = _anchor_relative_storage(filled, home)
    errors, cfg = _resolve_pool(cfg, master_config or MasterConfig())
    local = cfg.resources.resource_pool == LOCAL_POOL
    errors += _check_runnable(cfg, slots if local else None) + _check_env_sizes(cfg)
    if not errors and pool_capacity is not None:
        errors += capacity_errors(cfg.resources, master_config or MasterConfig(), pool_capacity)
    where = "the model directory sent" if model_def else "the model directory (none was sent)"
    errors += entrypoint_check(cfg.entrypoint, model_def, where, cfg.resources.slots_per_trial)
    python_errors, python_warnings = _check_interpreter(cfg, from_config)
    errors += python_errors
    try:
        build(storage_of(cfg)).check_access()
    except (StorageConfigError, CheckpointStorageError) as e:
        errors.append(
            f"checkpoint_storage: {e}" if isinstance(e, CheckpointStorageError) else str(e)
        )
    if errors:
        raise CreateError(errors)
    if store is not None:
        try:
            cfg = resolve_warm_start(cfg, store, warm_start_path)
        except WarmStartError as e:
            raise CreateError([str(e)]) from None
    return cfg, [*filled.warnings, *python_warnings]
