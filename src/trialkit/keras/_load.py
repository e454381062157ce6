"""``load_model_from_checkpoint_path``: a TFKerasTrial's compiled model with a checkpoint's weights,
for inference or inspection (trialkit's checkpoints and Determined's, reference §3.2)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..contract import import_trial_class
from ..core import DummyDistributedContext
from ._context import TFKerasTrialContext
from ._determined import is_determined_layout, load_determined_checkpoint
from ._keras import restore_weights
from ._trial import TFKerasTrial

logger = logging.getLogger("trialkit.keras")


def _load_data(root: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(trial_cls_spec, hparams, experiment_config) from ``load_data.json`` or the
    ``metadata.json`` Determined <= 0.17.7 wrote at download time."""
    load_data_file, metadata_file = root / "load_data.json", root / "metadata.json"
    if load_data_file.exists():
        data = json.loads(load_data_file.read_text())
        if data.get("trial_type") != "TFKerasTrial":
            logger.warning(
                "%s: trial_type %r, not TFKerasTrial; loading anyway", root, data.get("trial_type")
            )
        return (
            data["trial_cls_spec"],
            data.get("hparams") or {},
            data.get("experiment_config") or {},
        )
    metadata = json.loads(metadata_file.read_text()) if metadata_file.exists() else {}
    config = metadata.get("experiment_config")
    if not isinstance(config, dict) or not config.get("entrypoint"):
        raise RuntimeError(
            f"{root} has neither load_data.json nor a metadata.json with experiment_config: "
            "Determined <= 0.17.7 wrote that metadata.json only at download; download the "
            "checkpoint with Determined's Checkpoint.download() (or write_metadata_file) first"
        )
    return str(config["entrypoint"]), metadata.get("hparams") or {}, config


def load_model_from_checkpoint_path(
    path: str | Path, tags: list[str] | None = None, trial_class: type[TFKerasTrial] | None = None
) -> Any:
    """The checkpoint's model: its TFKerasTrial (imported from the checkpoint's ``code/``
    unless ``trial_class`` is given) builds and compiles it with the saved hyperparameters, then
    the weights and, where the checkpoint holds it, the optimizer's state are loaded (Determined's
    layouts of 0.12 to 0.38 and trialkit's). ``tags`` (SavedModel tags in Determined) is
    accepted and unused."""
    root = Path(path)
    spec, hparams, exp_conf = _load_data(root)
    cls = trial_class or import_trial_class(root / "code", spec)
    detached = SimpleNamespace(distributed=DummyDistributedContext(), info=None)
    context = TFKerasTrialContext(detached, hparams=hparams, exp_conf=exp_conf)  # type: ignore[arg-type]
    model = cls(context).build_model()
    from ._strategy import MODEL_WEIGHTS, OPTIMIZER_STATE  # trialkit's own files

    if (root / MODEL_WEIGHTS).exists():
        restore_weights(model, root / MODEL_WEIGHTS, root / OPTIMIZER_STATE, str(root))
    elif is_determined_layout(root):
        load_determined_checkpoint(model, root)
    else:
        raise RuntimeError(f"{root} holds no Keras weights ({MODEL_WEIGHTS} or Determined's)")
    return model
