"""Determined's ``determined.experimental`` on trialkit: ``client`` (the Python SDK, for the
running master of ``$TRIALKIT_HOME``), ``test_one_batch``, and ``core_v2`` (Determined 0.36+'s
unmanaged runs, recorded by trialkit's local mode)."""

from typing import Any

from . import client
from ._one_batch import test_one_batch

__all__ = ["client", "core_v2", "test_one_batch"]


def __getattr__(name: str) -> Any:
    if name == "core_v2":  # imported on first use: it pulls in the Core API
        import importlib

        return importlib.import_module(f"{__name__}.core_v2")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
