"""TFKerasTrial on Keras 3: subclass ``TFKerasTrial`` and run it as
``entrypoint: model_def:MyKerasTrial``. Importing this package does not import Keras,
TensorFlow or torch; the harness imports Keras when it runs."""

from ._context import TFKerasTrialContext
from ._data import SequenceAdapter
from ._trial import TFKerasTrial

__all__ = ["SequenceAdapter", "TFKerasTrial", "TFKerasTrialContext"]
