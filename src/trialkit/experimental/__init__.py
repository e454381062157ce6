"""Determined's ``determined.experimental`` on trialkit: ``client`` (the Python SDK, for the
running master of ``$TRIALKIT_HOME``) and ``test_one_batch``. Determined's ``core_v2``
(unmanaged runs) is ``trialkit.core.init()`` in local mode, which tracks such runs already."""

from typing import Any

from . import client
from ._one_batch import test_one_batch

__all__ = ["client", "test_one_batch"]


def __getattr__(name: str) -> Any:
    if name == "core_v2":
        raise AttributeError(
            "determined.experimental.core_v2 is not provided by trialkit: trialkit.core.init() "
            "outside the master already records an unmanaged experiment in $TRIALKIT_HOME"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
