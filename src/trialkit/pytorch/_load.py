"""``load_trial_from_checkpoint_path``: rebuild a Trial from a checkpoint directory, for
inference or inspection, with no master and no training context."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from ..core import DummyDistributedContext
from ._context import PyTorchTrialContext
from ._strategy import LOAD_DATA, STATE_DICT, load_model_state
from ._trial import PyTorchTrial


class CheckpointLoadContext(PyTorchTrialContext):
    """A context for re-creating a Trial outside training: models go to the CPU (or ``device``)."""

    def __init__(
        self,
        hparams: dict[str, Any] | None,
        exp_conf: dict[str, Any] | None,
        device: torch.device | str | None = "cpu",
    ) -> None:
        detached = SimpleNamespace(distributed=DummyDistributedContext(), info=None)
        super().__init__(
            detached,  # type: ignore[arg-type]
            hparams=hparams,
            exp_conf=exp_conf,
            managed_training=False,
            device=device,
        )

    def get_tensorboard_path(self) -> Any:
        raise RuntimeError("a CheckpointLoadContext has no TensorBoard directory")


def _import_trial(code_dir: Path, spec: str) -> type[PyTorchTrial]:
    module_name, _, qualname = spec.partition(":")
    if not code_dir.is_dir():
        raise RuntimeError(
            f"{code_dir} is missing: pass trial_class= to load_trial_from_checkpoint_path"
        )
    sys.path.insert(0, str(code_dir))
    try:
        cached = sys.modules.get(module_name)
        cached_file = getattr(cached, "__file__", None) or ""
        if cached is not None and not Path(cached_file).resolve().is_relative_to(
            code_dir.resolve()
        ):
            # Same module name imported from elsewhere: load the checkpoint's copy instead.
            del sys.modules[module_name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            # code/ holds the directory of the Trial's file, so a dotted module (pkg.model_def)
            # sits there under its last name.
            short = module_name.rpartition(".")[2]
            if short == module_name or not (code_dir / f"{short}.py").exists():
                raise
            module = importlib.import_module(short)
    finally:
        sys.path.remove(str(code_dir))
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj  # type: ignore[no-any-return]


def load_trial_from_checkpoint_path(
    path: str | Path,
    trial_class: type[PyTorchTrial] | None = None,
    trial_kwargs: dict[str, Any] | None = None,
    torch_load_kwargs: dict[str, Any] | None = None,
) -> PyTorchTrial:
    """The checkpoint's Trial, constructed with its hyperparameters and its model weights loaded
    (optimizers are left as constructed)."""
    root = Path(path)
    load_data_file = root / LOAD_DATA
    if not load_data_file.exists():
        raise RuntimeError(
            f"{root} has no {LOAD_DATA}: it is not a PyTorchTrial checkpoint (or predates the format)"
        )
    load_data = json.loads(load_data_file.read_text())
    if load_data.get("trial_type") != "PyTorchTrial":
        raise RuntimeError(
            f"{root}: trial_type {load_data.get('trial_type')!r} is not PyTorchTrial"
        )
    cls = trial_class or _import_trial(root / "code", load_data["trial_cls_spec"])
    context = CheckpointLoadContext(load_data.get("hparams"), load_data.get("experiment_config"))
    trial = cls(context, **(trial_kwargs or {}))  # type: ignore[call-arg]
    kwargs = {"map_location": "cpu", "weights_only": False, **(torch_load_kwargs or {})}
    state = torch.load(root / STATE_DICT, **kwargs)
    models = state["models_state_dict"]
    if len(models) != len(context.models):
        raise RuntimeError(
            f"checkpoint has {len(models)} model state(s); {cls.__name__} wraps {len(context.models)}"
        )
    for m, s in zip(context.models, models, strict=True):
        load_model_state(m, s)
    return trial
