"""What Determined's ``TrialContext.from_config(config)`` builds a trial context from, for the
PyTorch and Keras harnesses (here, not beside ``EnvContext``: it needs ``core``, which the
top-level package, the config and the master never load)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from ..core import DummyDistributedContext
from ..searcher import RandomState, sample_hparams


def local_context_args(config: dict[str, Any]) -> dict[str, Any]:
    """What Determined's ``TrialContext.from_config(config)`` builds a context from: a detached
    core (one worker, no master, nothing recorded), hyperparameters drawn once from the config's
    space, and the config's ``reproducibility.experiment_seed`` (else a time-based one)."""
    if not isinstance(config, dict):
        raise TypeError(
            f"from_config(config): expected the experiment config as a dict, got {config!r}"
        )
    seed = (config.get("reproducibility") or {}).get("experiment_seed")
    seed = int(seed) if seed is not None else int(time.time()) % 2**31
    hparams = sample_hparams(config.get("hyperparameters") or {}, RandomState(seed))
    detached = SimpleNamespace(distributed=DummyDistributedContext(), info=None)
    return {"core_context": detached, "hparams": hparams, "exp_conf": dict(config), "seed": seed}
