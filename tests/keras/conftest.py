"""TFKerasTrial tests (tox env `keras`: tensorflow-cpu + Keras 3); each module skips where
TensorFlow is not installed. The real-master fixtures come from the integration suite."""

from tests.integration.conftest import *  # noqa: F403  (the real-master fixtures)
