"""The one rule for "does this experiment use 0.37 operations?": ``SearcherConfig``'s."""

from __future__ import annotations

import json

import pytest

from trialkit.config import Generation, SearcherConfig

OPS_WITH_LENGTH = {"name": "single", "max_length": {"batches": 8}}
TIME = {"name": "adaptive_asha", "metric": "m", "max_trials": 2, "time_metric": "batches",
        "max_time": 8}  # fmt: skip


@pytest.mark.parametrize(
    ("section", "generation", "operations"),
    [
        (OPS_WITH_LENGTH, Generation.OPS, True),
        ({"name": "single", "max_length": 0}, Generation.OPS, False),  # a zero length: none
        ({"name": "custom", "unit": "batches"}, Generation.OPS, True),
        (TIME, Generation.REPORTS, False),
        ({"name": "single"}, Generation.REPORTS, False),
    ],
)
def test_generation_and_whether_trials_train_in_operations(
    section: dict[str, object], generation: Generation, operations: bool
) -> None:
    cfg = SearcherConfig.model_validate(section)
    assert cfg.generation is generation
    assert cfg.trains_in_operations is operations


def test_a_generation_reads_compares_and_serializes_as_its_version() -> None:
    assert Generation.OPS == "0.37" and Generation("0.38") is Generation.REPORTS
    assert str(Generation.OPS) == f"{Generation.OPS}" == "0.37"
    assert json.dumps({"generation": Generation.REPORTS}) == '{"generation": "0.38"}'
