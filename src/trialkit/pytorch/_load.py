"""``load_trial_from_checkpoint_path``: rebuild a Trial from a checkpoint directory, for
inference or inspection, with no master and no training context."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from ..contract import trial_class_from_code
from ..core import DummyDistributedContext
from ._context import PyTorchTrialContext
from ._strategy import _LEGACY_STATE_FILES, LOAD_DATA, STATE_DICT, _states, load_model_state
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


def _trial_spec(root: Path) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
    """(trial_cls_spec, hparams, experiment_config) from ``load_data.json``, or from the
    ``metadata.json`` that Determined <= 0.17.7 wrote at download time."""
    load_data_file, metadata_file = root / LOAD_DATA, root / "metadata.json"
    if load_data_file.exists():
        load_data = json.loads(load_data_file.read_text())
        kind = load_data.get("trial_type")
        if kind != "PyTorchTrial":
            hint = (
                " (load it with trialkit.keras.load_model_from_checkpoint_path)"
                if kind == "TFKerasTrial"
                else ""
            )
            raise RuntimeError(f"{root}: trial_type {kind!r} is not PyTorchTrial{hint}")
        return (
            load_data["trial_cls_spec"],
            load_data.get("hparams"),
            load_data.get("experiment_config"),
        )
    metadata = json.loads(metadata_file.read_text()) if metadata_file.exists() else {}
    config = metadata.get("experiment_config")
    if not isinstance(config, dict) or not config.get("entrypoint"):
        raise RuntimeError(
            f"{root} has neither {LOAD_DATA} nor a metadata.json with experiment_config: "
            "Determined <= 0.17.7 wrote that metadata.json only at download; download the "
            "checkpoint with Determined's Checkpoint.download() (or write_metadata_file) first"
        )
    # Checkpoints of that age always came from a Trial-class entrypoint.
    return str(config["entrypoint"]), metadata.get("hparams"), config


def load_trial_from_checkpoint_path(
    path: str | Path,
    trial_class: type[PyTorchTrial] | None = None,
    trial_kwargs: dict[str, Any] | None = None,
    torch_load_kwargs: dict[str, Any] | None = None,
) -> PyTorchTrial:
    """The checkpoint's Trial, constructed with its hyperparameters and its model weights loaded
    (optimizers are left as constructed). Reads Determined's checkpoints too (``load_data.json``
    or a <= 0.17.7 ``metadata.json``; ``state_dict.pth`` or its legacy names and keys); a Trial
    with the pre-0.13 ``build_model()`` gets its bare model back, as in Determined."""
    root = Path(path)
    spec, hparams, exp_conf = _trial_spec(root)
    state_file = next((root / f for f in _LEGACY_STATE_FILES if (root / f).exists()), None)
    if state_file is None:
        raise RuntimeError(f"{root} has no {STATE_DICT}: not a PyTorchTrial checkpoint")
    context = CheckpointLoadContext(hparams, exp_conf)
    with contextlib.ExitStack() as stack:
        # Without trial_class, Determined's way: the class from code/ under import_from_path,
        # constructed while the checkpoint's modules are the importable ones.
        cls = trial_class or stack.enter_context(trial_class_from_code(root / "code", spec))
        trial = cls(context, **(trial_kwargs or {}))  # type: ignore[call-arg]
        kwargs = {"map_location": "cpu", "weights_only": False, **(torch_load_kwargs or {})}
        state = torch.load(state_file, **kwargs)
        if not isinstance(state, dict):
            raise RuntimeError(
                f"{state_file} holds a {type(state).__name__}, not a checkpoint dict"
            )
        build_model = getattr(trial, "build_model", None)
        if callable(build_model):  # Determined < 0.13: the Trial built one model itself
            model = build_model()
            load_model_state(
                model, _states(state, "models_state_dict", "model_state_dict", 1, "model")[0]
            )
            return model  # type: ignore[no-any-return]
        models = _states(
            state, "models_state_dict", "model_state_dict", len(context.models), "model"
        )
        for m, s in zip(context.models, models, strict=True):
            load_model_state(m, s)
        return trial
