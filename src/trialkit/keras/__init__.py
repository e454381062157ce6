"""Keras on trialkit: subclass ``TFKerasTrial`` and run it as ``entrypoint: model_def:MyKerasTrial``,
or keep your own ``model.fit`` and pass it ``TrialkitCallback`` (Determined's
``DeterminedCallback``). Importing this package does not import Keras, TensorFlow or torch; the
harness imports Keras when it runs, the callback when it is first named."""

from typing import Any

from ._context import TFKerasTrialContext
from ._data import SequenceAdapter
from ._load import load_model_from_checkpoint_path
from ._trial import TFKerasTrial

#: Determined's name for what ``build_*_data_loader`` returns: a ``tf.data.Dataset``, a
#: ``keras.utils.Sequence`` or numpy arrays ``(x, y[, sample_weight])`` (type hints only).
InputData = Any

_LAZY = ("TrialkitCallback", "DeterminedCallback")


def __getattr__(name: str) -> Any:
    if name == "callbacks":  # Determined's det.keras.callbacks: importing it imports Keras
        import importlib

        return importlib.import_module(f"{__name__}.callbacks")
    if name in _LAZY:  # a Keras callback class: defining it imports Keras
        from . import _callback

        return getattr(_callback, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DeterminedCallback",
    "InputData",
    "SequenceAdapter",
    "TFKerasTrial",
    "TFKerasTrialContext",
    "TrialkitCallback",
    "callbacks",
    "load_model_from_checkpoint_path",
]
