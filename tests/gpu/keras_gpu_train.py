"""tests/keras/callback_train.py on Keras 3's torch backend, printing the backend and the device
the model's weights live on: ``python -m tests.gpu.keras_gpu_train EPOCHS``."""

import os

os.environ["KERAS_BACKEND"] = "torch"

import keras  # noqa: E402
from tests.keras import callback_train  # noqa: E402

_build = callback_train.build_model


def build_model() -> object:
    model = _build()
    device = model.weights[0].value.device.type  # type: ignore[attr-defined]
    print(f"KERAS {keras.backend.backend()} {device}", flush=True)
    return model


callback_train.build_model = build_model
callback_train.main()
