"""DeepSpeedTrial tests (tox env `deepspeed`, DS_ACCELERATOR=cpu); each module skips where
deepspeed is not installed. The real-master fixtures come from the integration suite."""

import os

os.environ.setdefault("DS_ACCELERATOR", "cpu")
os.environ.setdefault("DS_BUILD_OPS", "0")

from tests.integration.conftest import *  # noqa: E402, F403  (the real-master fixtures)
