"""``TrialRuntime``: what a Trial context shares with the harness's strategy, and nothing for
trial code. The context owns it (``context.runtime``); the strategy reads and sets only it, never
the context's private attributes. Framework packages extend it with their own fields."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(slots=True, kw_only=True, eq=False)
class TrialRuntime:
    """The framework-free part: what a checkpoint records of the trial and where it runs."""

    #: The experiment config as ``load_data.json`` records it (None: a local run without one).
    exp_conf: dict[str, Any] | None
    #: The hyperparameters as ``load_data.json`` records them (None: a context without them).
    hparams: dict[str, Any] | None
    #: Whether the trial runs under a master (its checkpoints then carry the working directory).
    on_cluster: bool = False
