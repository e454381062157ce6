"""``Progress``: the loop's serializable counters (``trial_state.pkl`` in every checkpoint)."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

TRIAL_STATE = "trial_state.pkl"
#: Determined's TFKerasTrial (legacy WorkloadSequencer) name and keys for the same state.
WORKLOAD_SEQUENCER_STATE = "workload_sequencer.pkl"


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


def read_trial_state(checkpoint: Path) -> Progress | None:
    """The loop state in a checkpoint: ``trial_state.pkl``, or Determined's legacy
    ``workload_sequencer.pkl`` (its ``steps_completed`` is batches trained); None if neither."""
    for name in (TRIAL_STATE, WORKLOAD_SEQUENCER_STATE):
        file = checkpoint / name
        if file.exists():
            with file.open("rb") as f:
                state = dict(pickle.load(f))
            if name == WORKLOAD_SEQUENCER_STATE and "batches_trained" not in state:
                state["batches_trained"] = state.get("steps_completed", 0)
            return Progress.from_state_dict(state)
    return None
