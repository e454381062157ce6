"""Which Keras the user's model is: tf_keras (Keras 2) when ``TF_USE_LEGACY_KERAS`` is set, as
``tf.keras`` does, else Keras 3. Imported only when a harness or the callback runs."""

from __future__ import annotations

import os
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
