"""trialkit: Determined's training APIs without a cluster.

``trialkit.core`` is the Core API; ``trialkit.get_cluster_info()`` tells a trial where it runs.
"""

from . import core
from ._info import ClusterInfo, TrialInfo, get_cluster_info
from .errors import InvalidHP

#: Log format whose level prefix lets log viewers filter by level.
LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"

__version__ = "0.1.0"

__all__ = ["LOG_FORMAT", "ClusterInfo", "InvalidHP", "TrialInfo", "core", "get_cluster_info"]
