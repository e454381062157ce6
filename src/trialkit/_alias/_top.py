"""The alias ``determined`` package: Determined's top-level names, each trialkit's own object;
subpackages (``det.core``, ``det.pytorch``...) import on first use, so ``import determined``
imports no training framework."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

#: The Determined release whose Python API trialkit implements (``det.__version__``).
DETERMINED_API_VERSION = "0.38.1"

#: Top-level names taken from ``trialkit`` itself.
_FROM_TRIALKIT = (
    "ClusterInfo",
    "EnvContext",
    "InvalidHP",
    "LOG_FORMAT",
    "RendezvousInfo",
    "ResourcesInfo",
    "TrialInfo",
    "get_cluster_info",
    "import_from_path",
)

#: Subpackages that ``det.<name>`` imports on first use (``determined.<name>`` -> trialkit's).
_SUBPACKAGES = ("core", "errors", "experimental", "generic", "keras", "launch", "pytorch")


def _getattr(name: str) -> Any:
    if name in _FROM_TRIALKIT:
        import trialkit

        return getattr(trialkit, name)
    if name in _SUBPACKAGES:
        try:
            return importlib.import_module(f"determined.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"determined.{name}":
                raise
            raise AttributeError(f"determined.{name}: {e}") from None
    raise AttributeError(
        f"module 'determined' (trialkit's alias) has no attribute {name!r}; "
        "see 'Coming from Determined' in trialkit's docs"
    )


def populate(module: ModuleType) -> None:
    """Fill the freshly created ``determined`` module."""
    module.__doc__ = (
        "trialkit's alias of Determined's Python API: determined.X is trialkit.X. "
        "Set TRIALKIT_DETERMINED_ALIAS=0 to turn it off."
    )
    module.__path__ = []  # a package: its submodules come from the alias finder
    module.__trialkit_alias__ = True  # type: ignore[attr-defined]
    module.__version__ = DETERMINED_API_VERSION  # type: ignore[attr-defined]
    module.__all__ = [*_FROM_TRIALKIT, *_SUBPACKAGES]  # type: ignore[attr-defined]
    module.__getattr__ = _getattr  # type: ignore[method-assign]
    module.__dir__ = _dir  # type: ignore[method-assign]


def _dir() -> list[str]:
    return sorted({"__version__", *_FROM_TRIALKIT, *_SUBPACKAGES})
