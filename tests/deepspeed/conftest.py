"""DeepSpeedTrial tests: skipped where deepspeed is not installed (run in the ``deepspeed`` tox
env with DS_ACCELERATOR=cpu). The real-master fixtures come from the integration suite."""

import os

import pytest

pytest.importorskip("deepspeed")
os.environ.setdefault("DS_ACCELERATOR", "cpu")
os.environ.setdefault("DS_BUILD_OPS", "0")

from tests.integration.conftest import *  # noqa: E402, F403  (the real-master fixtures)
