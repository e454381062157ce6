"""grid search: axes, product order, Go rounding, and handing out points (reference §7.3)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trialkit.searcher import (
    Close,
    Create,
    Shutdown,
    ValidateAfter,
    grid_points,
    make_search_method,
)

GRID = {"name": "grid", "metric": "loss", "max_concurrent_trials": 16}


def ints(lo: int, hi: int, count: int) -> dict[str, Any]:
    return {"type": "int", "minval": lo, "maxval": hi, "count": count}


def axis(leaf: dict[str, Any]) -> list[Any]:
    return [point["x"] for point in grid_points({"x": leaf})]


def test_first_axis_varies_slowest() -> None:
    points = grid_points({"1": ints(0, 20, 3), "2": ints(0, 10, 3)})
    assert [(p["1"], p["2"]) for p in points] == [
        (0, 0), (0, 5), (0, 10), (10, 0), (10, 5), (10, 10), (20, 0), (20, 5), (20, 10),
    ]  # fmt: skip


def test_int_rounding_is_half_away_from_zero() -> None:
    assert axis(ints(0, 5, 3)) == [0, 3, 5]  # 2.5 -> 3 (Python's round gives 2)
    assert axis(ints(-5, 0, 3)) == [-5, -3, 0]  # -2.5 -> -3
    assert axis(ints(0, 3, 1)) == [2]  # midpoint 1.5 -> 2
    assert axis(ints(-3, 0, 1)) == [-2]  # midpoint -1.5 -> -2
    assert axis(ints(1, 2, 1)) == [2]


def test_int_count_larger_than_range_is_clamped() -> None:
    assert axis(ints(0, 2, 10)) == [0, 1, 2]
    assert axis(ints(7, 7, 4)) == [7]


def test_double_and_log_axes() -> None:
    assert axis({"type": "double", "minval": 0.0, "maxval": 1.0, "count": 3}) == [0.0, 0.5, 1.0]
    assert axis({"type": "double", "minval": 0.0, "maxval": 1.0, "count": 1}) == [0.5]
    logs = axis({"type": "log", "minval": -3.0, "maxval": -1.0, "base": 10.0, "count": 3})
    assert logs == pytest.approx([1e-3, 1e-2, 1e-1])
    assert axis({"type": "log", "minval": 1.0, "maxval": 3.0, "base": 2.0, "count": 1}) == [4.0]


def test_const_categorical_nested_and_empty_group() -> None:
    space = {
        "b": {"type": "categorical", "vals": ["x", "y"]},
        "a": {"z": {"type": "const", "val": 1}, "y": ints(0, 1, 2)},
        "c": {},
    }
    assert grid_points(space) == [
        {"a": {"y": 0, "z": 1}, "b": "x", "c": {}},
        {"a": {"y": 0, "z": 1}, "b": "y", "c": {}},
        {"a": {"y": 1, "z": 1}, "b": "x", "c": {}},
        {"a": {"y": 1, "z": 1}, "b": "y", "c": {}},
    ]


def test_missing_count_names_the_path() -> None:
    with pytest.raises(ValueError, match=r"hyperparameters\.g\.lr\.count"):
        grid_points({"g": {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}})


def test_no_hyperparameters_means_no_trials_and_immediate_shutdown() -> None:
    assert grid_points({}) == []
    method = make_search_method(GRID, {}, 0)
    assert method.initial_operations() == [Shutdown()]
    assert method.progress() == 1.0


def test_points_are_handed_out_from_the_end_one_per_close() -> None:
    space = {"1": ints(0, 20, 3), "2": ints(0, 10, 3)}
    method = make_search_method({**GRID, "max_concurrent_trials": 2}, space, 0)
    ops = method.initial_operations()
    assert [op.hparams for op in ops] == [{"1": 20, "2": 10}, {"1": 20, "2": 5}]  # type: ignore[union-attr]
    seen = []
    pending = [op.request_id for op in ops]  # type: ignore[union-attr]
    while pending:
        rid = pending.pop(0)
        method.on_trial_created(rid)
        ops = method.on_trial_closed(rid)
        seen.append(rid)
        pending += [op.request_id for op in ops if isinstance(op, Create)]
    assert ops == [Shutdown()]
    assert len(seen) == 9


def test_unlimited_concurrency_starts_every_point_and_037_ops() -> None:
    method = make_search_method(
        {**GRID, "max_concurrent_trials": 0, "max_length": {"batches": 50}},
        {"x": ints(0, 3, 4)},
        0,
    )
    ops = method.initial_operations()
    assert len(ops) == 12
    for i in range(0, 12, 3):
        create, validate, close = ops[i : i + 3]
        assert isinstance(create, Create)
        assert validate == ValidateAfter(create.request_id, 50)
        assert close == Close(create.request_id)
    assert [op.hparams["x"] for op in ops[::3]] == [3, 2, 1, 0]  # type: ignore[union-attr]


def test_grid_progress_037() -> None:
    method = make_search_method(
        {**GRID, "max_length": 10}, {"x": ints(0, 1, 2)}, 0
    )  # 2 points, L = 10
    a, _, _, b, _, _ = method.initial_operations()
    for rid in (a.request_id, b.request_id):  # type: ignore[union-attr]
        method.on_trial_created(rid)
    method.on_trial_progress(a.request_id, 5)  # type: ignore[union-attr]
    assert method.progress() == pytest.approx(5 / 20)
    method.on_trial_progress(b.request_id, float("nan"))  # type: ignore[union-attr]
    assert method.progress() == pytest.approx(5 / 20)
    method.on_validation_completed(a.request_id, {"loss": 1.0}, 10)  # type: ignore[union-attr]
    method.on_trial_closed(a.request_id)  # type: ignore[union-attr]
    assert method.progress() == pytest.approx(10 / 20)


leaf_strategy = st.one_of(
    st.tuples(st.integers(-20, 20), st.integers(0, 10), st.integers(1, 5)).map(
        lambda t: ints(t[0], t[0] + t[1], t[2])
    ),
    st.lists(st.integers(), min_size=1, max_size=3).map(
        lambda vals: {"type": "categorical", "vals": vals}
    ),
    st.integers(1, 4).map(lambda c: {"type": "double", "minval": 0.0, "maxval": 1.0, "count": c}),
)


@settings(max_examples=40, deadline=None)
@given(
    space=st.dictionaries(st.sampled_from("abcdef"), leaf_strategy, min_size=1, max_size=3),
    concurrency=st.integers(0, 4),
    order=st.randoms(use_true_random=False),
)
def test_grid_search_visits_each_point_once(
    space: dict[str, Any], concurrency: int, order: Any
) -> None:
    method = make_search_method({**GRID, "max_concurrent_trials": concurrency}, space, 0)
    running = [op for op in method.initial_operations() if isinstance(op, Create)]
    visited, shutdown = [], None
    while running:
        create = running.pop(order.randrange(len(running)))
        method.on_trial_created(create.request_id)
        visited.append(create.hparams)
        for op in method.on_trial_closed(create.request_id):
            if isinstance(op, Create):
                running.append(op)
            elif isinstance(op, Shutdown):
                shutdown = op
    expected = grid_points(space)
    assert len(visited) == math.prod(axis_size(leaf) for leaf in space.values())
    key = lambda p: json.dumps(p, sort_keys=True)  # noqa: E731
    assert sorted(map(key, visited)) == sorted(map(key, expected))  # each point exactly once
    assert shutdown == Shutdown()


def axis_size(leaf: dict[str, Any]) -> int:
    if leaf["type"] == "int":
        return min(leaf["count"], leaf["maxval"] - leaf["minval"] + 1)
    if leaf["type"] == "categorical":
        return len(leaf["vals"])
    return int(leaf["count"])


def test_halves_below_one_round_away_from_zero() -> None:
    assert axis(ints(0, 1, 1)) == [1]  # midpoint 0.5 -> 1
    assert axis(ints(-1, 0, 1)) == [-1]  # midpoint -0.5 -> -1


@pytest.mark.parametrize("count", [0, 2.0, True, "3"])
def test_a_count_that_is_not_a_positive_int_is_refused(count: Any) -> None:
    with pytest.raises(ValueError) as err:
        grid_points({"x": ints(0, 5, count)})
    assert str(err.value) == (
        f"hyperparameters.x.count: got {count!r}; grid search needs an int >= 1"
        " on every int hyperparameter"
    )


def test_an_unknown_type_is_named() -> None:
    with pytest.raises(ValueError) as err:
        grid_points({"g": {"x": {"type": "uniform", "count": 2}}})
    assert str(err.value) == "hyperparameters.g.x.type: got 'uniform'; expected a known type"


def test_points_do_not_share_mutable_values() -> None:
    """Each point's hyperparameters are its own: a trial changing a list it was given changes
    no other trial's, nor the search space."""
    space = {"net": {"type": "categorical", "vals": [{"layers": [64]}]}, "x": ints(0, 1, 2)}
    first, second = grid_points(space)
    first["net"]["layers"].append(32)
    assert second["net"] == {"layers": [64]}
    assert space["net"]["vals"] == [{"layers": [64]}]


def test_a_restored_grid_hands_out_the_points_left() -> None:
    """The master saves a search's state and loads it into a new one after a restart: the
    points not handed out yet are handed out, none twice."""
    space = {"1": ints(0, 20, 3)}
    method = make_search_method({**GRID, "max_concurrent_trials": 1}, space, 0)
    [first] = method.initial_operations()
    method.on_trial_created(first.request_id)  # type: ignore[union-attr]
    saved = json.loads(json.dumps(method.save()))
    restored = make_search_method({**GRID, "max_concurrent_trials": 1}, space, 0)
    restored.load(saved)
    ops = restored.on_trial_closed(first.request_id)  # type: ignore[union-attr]
    assert [op.hparams for op in ops if isinstance(op, Create)] == [{"1": 10}]
