"""``Progress``: the loop's serializable counters (``trial_state.pkl`` in every checkpoint)."""

from __future__ import annotations

import dataclasses
from typing import Any

TRIAL_STATE = "trial_state.pkl"


@dataclasses.dataclass
class Progress:
    """Serializable loop state (``trial_state.pkl``; Determined's keys plus trialkit's)."""

    trial_id: int = 0
    batches_trained: int = 0
    epochs_trained: int = 0
    records_trained: int = 0
    last_val: int = 0
    last_ckpt: int = 0
    step_id: int = 0
    shuffle_seed: int = 0
    last_searcher_metric: Any = None

    def state_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> Progress:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in state.items() if k in known})
