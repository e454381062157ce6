"""Which Keras the user's model is: tf_keras (Keras 2) when ``TF_USE_LEGACY_KERAS`` is set, as
``tf.keras`` does, else Keras 3. Imported only when a harness or the callback runs."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any


def legacy_keras_requested() -> bool:
    """True when ``TF_USE_LEGACY_KERAS`` asks for tf_keras (TensorFlow's own rule)."""
    return os.environ.get("TF_USE_LEGACY_KERAS", "").lower() in ("1", "true", "yes")


def keras_module() -> ModuleType:
    """The Keras module ``tf.keras`` would be: tf_keras or Keras 3."""
    if legacy_keras_requested():
        try:
            import tf_keras
        except ImportError as e:
            raise ImportError(
                "TF_USE_LEGACY_KERAS=1 but tf_keras is not installed: "
                "pip install --no-deps tf_keras (next to tensorflow), or unset TF_USE_LEGACY_KERAS"
            ) from e
        return tf_keras
    import keras

    return keras


def is_keras2(keras: ModuleType) -> bool:
    """tf_keras / Keras 2 rather than Keras 3."""
    return not str(keras.__version__).startswith("3.")


def optimizer_variables(optimizer: Any) -> list[Any]:
    """An optimizer's variables (a property in Keras 3, a method on older tf_keras optimizers)."""
    found = optimizer.variables
    return list(found() if callable(found) else found)


def save_optimizer_state(optimizer: Any, file: Path) -> None:
    """The optimizer's variables as one ``.npz`` (nothing while it has none: not built yet)."""
    if optimizer is None or not hasattr(optimizer, "save_own_variables"):
        return
    if not optimizer_variables(optimizer):
        return
    import numpy as np

    store: dict[str, Any] = {}
    optimizer.save_own_variables(store)
    arrays: dict[str, Any] = {k: np.asarray(v) for k, v in store.items()}
    np.savez(file, **arrays)


def restore_weights(model: Any, weights: Path, optimizer_file: Path, where: str) -> None:
    """Load the model's weights and, when ``optimizer_file`` exists, its optimizer's state
    (building a tf_keras optimizer first, which builds lazily). ``where`` names the checkpoint
    in the error for an optimizer state that does not fit."""
    import numpy as np

    optimizer = getattr(model, "optimizer", None)
    store: dict[str, Any] = {}
    if optimizer_file.exists() and optimizer is not None:
        with np.load(optimizer_file) as saved:
            store = {k: saved[k] for k in saved.files}
        if len(optimizer_variables(optimizer)) != len(store):
            optimizer.build(model.trainable_variables)
    model.load_weights(str(weights))
    if not store or optimizer is None:
        return
    have = len(optimizer_variables(optimizer))
    if len(store) != have:
        raise RuntimeError(
            f"{where}: optimizer state has {len(store)} variables; the model's optimizer has {have}"
        )
    optimizer.load_own_variables(store)
