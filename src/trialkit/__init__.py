"""trialkit: Determined's training APIs without a cluster.

``trialkit.core`` is the Core API; ``trialkit.get_cluster_info()`` tells a trial where it runs.
"""

from typing import TYPE_CHECKING, Any

from .contract import (
    ClusterInfo,
    EnvContext,
    RendezvousInfo,
    ResourcesInfo,
    TrialInfo,
    get_cluster_info,
    import_from_path,
)
from .errors import InvalidHP

if TYPE_CHECKING:
    from . import core


def __getattr__(name: str) -> Any:
    # ``trialkit.core`` on first use: the CLI's read commands import ``trialkit`` without it.
    if name == "core":
        import importlib

        return importlib.import_module(".core", __name__)
    raise AttributeError(f"module 'trialkit' has no attribute {name!r}")


#: Log format whose level prefix lets log viewers filter by level.
LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"

__version__ = "0.1.0"

__all__ = [
    "LOG_FORMAT",
    "ClusterInfo",
    "EnvContext",
    "InvalidHP",
    "RendezvousInfo",
    "ResourcesInfo",
    "TrialInfo",
    "core",
    "get_cluster_info",
    "import_from_path",
]
