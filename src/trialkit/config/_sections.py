"""The smaller sections: resources, environment, bind_mounts, optimizations, profiling, seed."""

from __future__ import annotations

import posixpath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    ModelWrapValidatorHandler,
    PlainValidator,
    PrivateAttr,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from trialkit.config._base import ConfigModel, JsonDict, drop_nulls
from trialkit.config._errors import Issue, custom_error, raise_issues, show, unknown_key_message

Device = Literal["cpu", "cuda", "rocm"]
DEVICES: tuple[Device, ...] = ("cpu", "cuda", "rocm")


def _shm_size(value: object) -> int | str:
    """``shm_size``: bytes as an int, or a size string such as ``"4G"``."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.strip():
        return value
    raise custom_error(f"expected a byte count >= 0 or a size such as '4G', got {show(value)}")


class Resources(ConfigModel):
    """``resources``: ``slots_per_trial`` and ``resource_pool`` (a pool of the master config,
    master.yaml; empty or ``default``: the master's default pool) drive scheduling."""

    slots_per_trial: int = Field(default=1, ge=0)
    max_slots: int | None = Field(default=None, ge=0)
    weight: float = Field(default=1.0, ge=0)
    priority: int | None = Field(default=None, ge=1, le=99)
    resource_pool: str = ""
    shm_size: Annotated[int | str, PlainValidator(_shm_size)] | None = None
    is_single_node: bool | None = None
    devices: list[JsonDict] = []
    native_parallel: bool = False
    agent_label: str | None = None


def env_entry_problem(entry: object) -> str | None:
    """Why ``entry`` is not a ``KEY=VALUE`` string, or None."""
    if isinstance(entry, str) and entry.partition("=")[0].strip() and "=" in entry:
        return None
    return f'expected "KEY=VALUE", got {show(entry)}'


def _env_entry(entry: str) -> str:
    problem = env_entry_problem(entry)
    if problem is not None:
        raise custom_error(problem)
    return entry


EnvEntry = Annotated[str, AfterValidator(_env_entry)]


def _image(value: object) -> str | dict[str, str]:
    """``image``: a name, or one per device (ignored locally, kept for the record)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return dict(value)
    raise custom_error(f"expected an image name or {{cpu: ..., cuda: ...}}, got {show(value)}")


def _python(value: object) -> str:
    """``python``: an absolute path to the interpreter that runs the experiment's trials."""
    if isinstance(value, str) and posixpath.isabs(value) and "\0" not in value:
        return value
    raise custom_error(
        f"expected the absolute path of a Python interpreter, e.g. /opt/venv/bin/python, got {show(value)}"
    )


class Environment(ConfigModel):
    """``environment``: ``environment_variables`` is the CPU list; see ``variables_for``.

    ``python`` (trialkit's own key) is the interpreter the trials run with; the master fills in
    the one ``trialkit experiment create`` ran with when the config gives none.
    """

    python: Annotated[str, PlainValidator(_python)] | None = None
    image: Annotated[str | dict[str, str], PlainValidator(_image)] | None = None
    environment_variables: list[EnvEntry] = []
    ports: dict[str, int] = {}
    proxy_ports: list[JsonDict] = []
    force_pull_image: bool = False
    registry_auth: JsonDict | None = None
    add_capabilities: list[str] = []
    drop_capabilities: list[str] = []
    pod_spec: JsonDict | None = None
    _by_device: dict[str, list[str]] = PrivateAttr(default_factory=dict)

    def variables_for(self, device: Device = "cpu") -> list[str]:
        """The ``KEY=VALUE`` list for trials running on ``device``."""
        return list(self._by_device.get(device, self.environment_variables))

    def every_variable(self) -> list[str]:
        """Every ``KEY=VALUE`` entry of every device's list, each once."""
        return list(dict.fromkeys(v for d in DEVICES for v in self.variables_for(d)))

    def variables_for_slots(self, *, gpus: bool) -> list[str]:
        """The ``cuda`` list when the trial uses GPUs, else the ``cpu`` list."""
        return self.variables_for("cuda" if gpus else "cpu")

    @model_validator(mode="wrap")
    @classmethod
    def _per_device(cls, data: Any, handler: ModelWrapValidatorHandler[Environment]) -> Environment:
        """Accept ``environment_variables`` as a list or as ``{cpu, cuda, rocm, gpu}`` lists."""
        data = drop_nulls(data)
        by_device: dict[str, list[str]] | None = None
        issues: list[Issue] = []
        if isinstance(data, dict) and isinstance(data.get("environment_variables"), dict):
            by_device, issues = _split_by_device(data["environment_variables"])
            data = {**data, "environment_variables": by_device["cpu"]}
        try:
            env = handler(data)
        except ValidationError as exc:
            raise_issues(issues, exc)
            raise
        raise_issues(issues)
        shared = env.environment_variables
        env._by_device = by_device or {device: list(shared) for device in DEVICES}
        return env

    @field_serializer("environment_variables")
    def _dump_by_device(self, value: list[str]) -> dict[str, list[str]]:
        return {device: self.variables_for(device) for device in DEVICES}


def _split_by_device(raw: dict[Any, Any]) -> tuple[dict[str, list[str]], list[Issue]]:
    """Validate the per-device form; ``gpu`` is Determined's older name for ``cuda``."""
    loc = ("environment_variables",)
    issues: list[Issue] = []
    out: dict[str, list[str]] = {device: [] for device in DEVICES}
    if "gpu" in raw and "cuda" in raw:
        issues.append(Issue((*loc, "gpu"), "old name of cuda, and cuda is also given; keep cuda"))
    for key, entries in raw.items():
        device = "cuda" if key == "gpu" else key
        if entries is None:
            continue
        if device not in DEVICES:
            issues.append(Issue((*loc, str(key)), unknown_key_message(key, [*DEVICES, "gpu"])))
        elif not isinstance(entries, list):
            issues.append(
                Issue((*loc, key), f'expected a list of "KEY=VALUE", got {show(entries)}')
            )
        else:
            issues.extend(_entry_issues(entries, (*loc, key)))
            out[device] = [e for e in entries if isinstance(e, str)]
    return out, issues


def _entry_issues(entries: list[Any], loc: tuple[str, ...]) -> list[Issue]:
    found = ((i, env_entry_problem(e)) for i, e in enumerate(entries))
    return [Issue((*loc, i), problem) for i, problem in found if problem is not None]


class BindMount(ConfigModel):
    """One ``bind_mounts`` entry: the master links ``container_path`` to ``host_path``."""

    host_path: str
    container_path: str
    read_only: bool = False
    propagation: str = "rprivate"

    @field_validator("host_path")
    @classmethod
    def _absolute(cls, path: str) -> str:
        if not posixpath.isabs(path):
            raise custom_error(f"must be an absolute path, got {path!r}")
        return path

    @field_validator("container_path")
    @classmethod
    def _not_dot(cls, path: str) -> str:
        if path.strip() in (".", ""):
            raise custom_error(f"must name a directory other than '.', got {path!r}")
        return path


class Optimizations(ConfigModel):
    """``optimizations``: aggregation settings used by the harnesses; the rest is Horovod-era."""

    aggregation_frequency: int = Field(default=1, ge=1)
    average_aggregated_gradients: bool = True
    average_training_metrics: bool = True
    gradient_compression: bool = False
    mixed_precision: str = "O0"
    tensor_fusion_threshold: int = Field(default=64, ge=0)
    tensor_fusion_cycle_time: int = Field(default=1, ge=0)
    auto_tune_tensor_fusion: bool = False
    grad_updates_size_file: str | None = None


class Profiling(ConfigModel):
    """``profiling``: as in Determined 0.38 only ``enabled`` matters."""

    enabled: bool = False
    begin_on_batch: int = Field(default=0, ge=0)
    end_after_batch: int | None = Field(default=None, ge=0)
    sync_timings: bool = True

    @model_validator(mode="after")
    def _ordered(self) -> Profiling:
        if self.end_after_batch is not None and self.end_after_batch < self.begin_on_batch:
            raise custom_error(
                f"end_after_batch ({self.end_after_batch}) is before begin_on_batch "
                f"({self.begin_on_batch}); swap them"
            )
        return self


class Reproducibility(ConfigModel):
    """``reproducibility``: the master fills ``experiment_seed`` at creation when it is unset."""

    experiment_seed: int | None = Field(default=None, ge=0, le=2**32 - 1)
