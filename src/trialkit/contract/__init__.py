"""What a trial process and the master agree on, without either importing the other: the cluster
info file a trial starts with (``ClusterInfo``, Determined's ``det.get_cluster_info()``), the
checkpoint journal a trial writes while the master is away, the journal of a local-mode run
(``core.init()`` with no master) that the master ingests, and importing a trial's own code
(``import_from_path``, a checkpoint's ``code/`` copy)."""

from ._cluster_info import (
    INFO_ENV,
    ClusterInfo,
    RendezvousInfo,
    ResourcesInfo,
    TrialInfo,
    get_cluster_info,
)
from ._env_context import EnvContext, env_context_for
from ._import import import_from_path
from ._journal import JOURNAL_DIR, journal_dir, trial_journal_dir, write_entry
from ._local_runs import (
    JOURNAL_SUFFIX,
    LOCAL_RUNS_DIR,
    JournalWriter,
    journal_path,
    local_runs_dir,
    local_tensorboard_dir,
    new_run_key,
    read_entries,
)
from ._retry import REPORT_RETRY_SECONDS, RETRY_ENV, retry_window
from ._trial_code import import_trial_class, trial_class_from_code

__all__ = [
    "INFO_ENV",
    "JOURNAL_DIR",
    "REPORT_RETRY_SECONDS",
    "RETRY_ENV",
    "JOURNAL_SUFFIX",
    "LOCAL_RUNS_DIR",
    "ClusterInfo",
    "EnvContext",
    "JournalWriter",
    "RendezvousInfo",
    "ResourcesInfo",
    "TrialInfo",
    "env_context_for",
    "get_cluster_info",
    "import_from_path",
    "import_trial_class",
    "journal_dir",
    "journal_path",
    "local_runs_dir",
    "local_tensorboard_dir",
    "new_run_key",
    "read_entries",
    "trial_class_from_code",
    "retry_window",
    "trial_journal_dir",
    "write_entry",
]
