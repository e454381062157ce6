"""Keys Determined accepts that mean nothing to local trials, and the seed-002 legacy keys."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from trialkit.config._errors import Issue, show

_CONTAINERS = "trials run as local processes, not containers"
_SCHEDULER = "the local scheduler does not use it"
_UNSUPPORTED = "not supported by trialkit"
_HOROVOD = "Horovod-era option; not used"

#: (section or "" for top level, key, why it is ignored)
IGNORED: tuple[tuple[str, str, str], ...] = (
    ("environment", "image", _CONTAINERS),
    ("environment", "force_pull_image", _CONTAINERS),
    ("environment", "registry_auth", _CONTAINERS),
    ("environment", "add_capabilities", _CONTAINERS),
    ("environment", "drop_capabilities", _CONTAINERS),
    ("environment", "pod_spec", _CONTAINERS),
    ("environment", "ports", "no proxy; trials run as local processes"),
    ("environment", "proxy_ports", "no proxy; trials run as local processes"),
    ("resources", "shm_size", _CONTAINERS),
    ("resources", "devices", _CONTAINERS),
    ("resources", "agent_label", "no agents; trials run on this machine"),
    ("resources", "priority", _SCHEDULER),
    ("resources", "weight", _SCHEDULER),
    ("resources", "max_slots", _SCHEDULER),
    ("resources", "is_single_node", _SCHEDULER),
    ("resources", "native_parallel", "deprecated in Determined; not supported"),
    ("", "workspace", "trialkit has no workspaces"),
    ("", "project", "trialkit has no projects"),
    ("", "slurm", "no Slurm launcher"),
    ("", "pbs", "no PBS launcher"),
    ("", "security", _UNSUPPORTED),
    ("", "integrations", _UNSUPPORTED),
    ("", "log_policies", _UNSUPPORTED),
    ("", "retention_policy", _UNSUPPORTED),
    ("", "tensorboard_storage", "deprecated in Determined; not used"),
    ("", "data_layer", "deprecated in Determined; not used"),
    ("", "internal", _UNSUPPORTED),
    ("profiling", "begin_on_batch", "only profiling.enabled is used, as in Determined 0.38"),
    ("profiling", "end_after_batch", "only profiling.enabled is used, as in Determined 0.38"),
    ("profiling", "sync_timings", "only profiling.enabled is used, as in Determined 0.38"),
    ("optimizations", "gradient_compression", _HOROVOD),
    ("optimizations", "tensor_fusion_threshold", _HOROVOD),
    ("optimizations", "tensor_fusion_cycle_time", _HOROVOD),
    ("optimizations", "auto_tune_tensor_fusion", _HOROVOD),
    ("optimizations", "grad_updates_size_file", _HOROVOD),
    ("optimizations", "mixed_precision", "legacy option; use torch.autocast in the trial"),
    (
        "optimizations",
        "average_training_metrics",
        "training metrics are always averaged across workers, as Determined's PyTorchTrial does",
    ),
)
#: Values that are as good as the default.
_HARMLESS: dict[tuple[str, str], tuple[object, ...]] = {}


def ignored_warnings(cfg: BaseModel) -> list[str]:
    """One line per ignored key whose value differs from its default."""
    lines = []
    for section, key, why in IGNORED:
        owner = getattr(cfg, section) if section else cfg
        value = getattr(owner, key)
        default = type(owner).model_fields[key].get_default(call_default_factory=True)
        if value == default or value in _HARMLESS.get((section, key), ()):
            continue
        path = f"{section}.{key}" if section else key
        lines.append(f"{path}: ignored ({why})")
    return lines


def fold_legacy_entrypoint(data: dict[str, Any]) -> tuple[dict[str, Any], list[Issue], list[str]]:
    """Seed 002's ``entrypoint_script`` (+ ``launch_layer``) become ``entrypoint``."""
    if "entrypoint_script" not in data and "launch_layer" not in data:
        return data, [], []
    data = dict(data)
    script, layer = data.pop("entrypoint_script", None), data.pop("launch_layer", None)
    issues = _legacy_issues(data, script, layer)
    if issues or script is None:
        return data, issues, []
    folded = f"{layer} {script}" if layer else script
    data["entrypoint"] = folded
    warning = f"entrypoint_script: legacy draft key; write entrypoint: {folded!r} instead"
    return data, [], [warning]


def _legacy_issues(data: dict[str, Any], script: object, layer: object) -> list[Issue]:
    issues = []
    if "entrypoint" in data:
        key = "entrypoint_script" if script is not None else "launch_layer"
        issues.append(Issue((key,), "cannot be combined with entrypoint; keep only entrypoint"))
    elif script is None:
        msg = "only valid with entrypoint_script; put the launcher in entrypoint instead"
        issues.append(Issue(("launch_layer",), msg))
    for key, value in (("entrypoint_script", script), ("launch_layer", layer)):
        if value is not None and not (isinstance(value, str) and value.strip()):
            issues.append(Issue((key,), f"expected a command string, got {show(value)}"))
    return issues
