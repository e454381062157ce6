"""``TFKerasTrial``: Determined's Keras Trial contract (build the model and the data)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import HarnessError

if TYPE_CHECKING:
    from ._context import TFKerasTrialContext


class TrialContractError(HarnessError, ValueError):
    """A TFKerasTrial or its config breaks the harness contract; the trial log shows one line."""


class TFKerasTrial:
    """Subclass and implement ``build_model`` and the two data loaders; run it with
    ``entrypoint: model_def:MyKerasTrial``. The harness trains with the compiled model's own
    train step, on the shared loop's schedule."""

    trial_context_class: type[TFKerasTrialContext] | None = None

    def __init__(self, context: TFKerasTrialContext) -> None:
        self.context = context

    def build_model(self) -> Any:
        """A compiled ``keras.Model`` (wrapped with ``context.wrap_model``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement build_model()")

    def build_training_data_loader(self) -> Any:
        """A ``tf.data.Dataset``, a ``keras.utils.PyDataset``/``Sequence``, or ``(x, y[, w])``."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement build_training_data_loader()"
        )

    def build_validation_data_loader(self) -> Any:
        """Same input types as ``build_training_data_loader``; evaluated whole."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement build_validation_data_loader()"
        )

    def keras_callbacks(self) -> list[Any]:
        """Keras callbacks run at the points ``model.fit`` would run them."""
        return []

    def session_config(self) -> Any:
        """TF1 graph-mode session settings; accepted and ignored (Keras 3 runs eagerly)."""
        return None
