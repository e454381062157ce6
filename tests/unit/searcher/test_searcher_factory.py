"""make_search_method: which algorithm a searcher section builds, and what it refuses."""

from __future__ import annotations

import pytest

from trialkit.searcher import make_search_method
from trialkit.searcher._rung_view import asha_rungs

from .test_searcher_asha import SPACE, adaptive


def test_a_custom_searcher_is_not_a_built_in_method() -> None:
    with pytest.raises(ValueError, match=(
        "^searcher.name: a custom searcher is a trialkit.searcher.SearchMethod run by the master"
        " or a LocalSearchRunner, not a built-in search method$"
    )):  # fmt: skip
        make_search_method({"name": "custom", "metric": "loss"}, SPACE, 0)


@pytest.mark.parametrize(
    ("fields", "rungs"),
    [
        ({"mode": "standard"}, [3, 2]),
        ({"mode": "conservative"}, [3, 2, 1]),
        ({"mode": "aggressive"}, [3]),
        ({"mode": "conservative", "bracket_rungs": [2]}, [2]),
    ],
)
def test_adaptive_mode_and_bracket_rungs_choose_the_brackets(
    fields: dict[str, object], rungs: list[int]
) -> None:
    searcher = adaptive(max_trials=20, max_length=64, max_rungs=3, **fields)
    brackets = asha_rungs(searcher, None)
    assert brackets is not None and [len(b.rungs) for b in brackets] == rungs
    method = make_search_method(searcher, SPACE, 0)
    assert len(method.save()["strategy"]["brackets"]) == len(rungs)
