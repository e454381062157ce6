"""The loop state a checkpoint carries (harness/_progress.py): ``trial_state.pkl``, or Determined's
legacy ``workload_sequencer.pkl`` (TFKerasTrial), whose ``steps_completed`` is batches trained."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from trialkit.harness._progress import Progress, read_trial_state


def _write(path: Path, name: str, state: dict[str, Any]) -> Path:
    (path / name).write_bytes(pickle.dumps(state))
    return path


def test_trial_state_round_trips_and_ignores_keys_it_does_not_know(tmp_path: Path) -> None:
    p = Progress(trial_id=3, batches_trained=40, epochs_trained=2, records_trained=1280,
                 last_val=40, last_ckpt=32, shuffle_seed=9, last_searcher_metric=0.25)  # fmt: skip
    _write(tmp_path, "trial_state.pkl", {**p.state_dict(), "added_later": 1})
    assert read_trial_state(tmp_path) == p


def test_a_legacy_workload_sequencer_state_counts_its_steps_as_batches(tmp_path: Path) -> None:
    # what Determined's TFKerasTrial wrote (tests/keras/test_determined_checkpoint.py)
    state = {"trial_id": 3, "last_ckpt": 7, "steps_completed": 7, "step_id": 7, "last_val": 7}
    p = read_trial_state(_write(tmp_path, "workload_sequencer.pkl", state))
    assert p == Progress(trial_id=3, batches_trained=7, last_ckpt=7, step_id=7, last_val=7)


def test_a_legacy_state_keeps_batches_trained_when_it_has_them(tmp_path: Path) -> None:
    state = {"trial_id": 3, "steps_completed": 7, "batches_trained": 12}
    p = read_trial_state(_write(tmp_path, "workload_sequencer.pkl", state))
    assert p is not None and p.batches_trained == 12


def test_a_legacy_state_without_steps_has_trained_nothing(tmp_path: Path) -> None:
    p = read_trial_state(_write(tmp_path, "workload_sequencer.pkl", {"trial_id": 3}))
    assert p == Progress(trial_id=3, batches_trained=0)


def test_trial_state_wins_over_a_legacy_state_and_neither_is_none(tmp_path: Path) -> None:
    assert read_trial_state(tmp_path) is None
    _write(tmp_path, "workload_sequencer.pkl", {"trial_id": 1, "steps_completed": 5})
    _write(tmp_path, "trial_state.pkl", Progress(trial_id=2, batches_trained=8).state_dict())
    p = read_trial_state(tmp_path)
    assert p is not None and (p.trial_id, p.batches_trained) == (2, 8)
