"""Hyperparameter sampling and the searcher RNG's draw order (reference §7.1)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trialkit.searcher import Create, make_search_method, sample_hparams

SPACE = {
    "lr": {"type": "log", "minval": -4.0, "maxval": -1.0, "base": 10.0, "count": None},
    "layers": {"type": "int", "minval": 1, "maxval": 8, "count": None},
    "dropout": {"type": "double", "minval": 0.1, "maxval": 0.5, "count": None},
    "optimizer": {"type": "categorical", "vals": ["sgd", "adam", "rmsprop"]},
    "global_batch_size": {"type": "const", "val": 32},
    "block": {
        "width": {"type": "int", "minval": 16, "maxval": 64, "count": None},
        "act": {"type": "categorical", "vals": ["relu", "gelu"]},
    },
}
RANDOM = {"name": "random", "metric": "loss", "max_trials": 4, "max_concurrent_trials": 0}


def raw_words(rng: np.random.RandomState, n: int) -> list[int]:
    """The next n raw MT19937 outputs of ``rng`` (read from a copy of its state)."""
    _, key, pos, *_ = rng.get_state(legacy=True)
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}  # type: ignore[typeddict-item]
    return [int(w) for w in bits.random_raw(n)]


def expected_first_trial(seed: int) -> Create:
    """The documented order, computed by hand: sorted names (nested too), uuid words, seed."""
    rs = np.random.RandomState(seed)
    hparams = {
        "block": {
            "act": ["relu", "gelu"][rs.randint(0, 2)],
            "width": 16 + int(rs.randint(0, 64 - 16 + 1)),
        },
        "dropout": 0.1 + (0.5 - 0.1) * rs.random_sample(),
        "global_batch_size": 32,
        "layers": 1 + int(rs.randint(0, 8)),
        "lr": 10.0 ** (-4.0 + (-1.0 - -4.0) * rs.random_sample()),
        "optimizer": ["sgd", "adam", "rmsprop"][rs.randint(0, 3)],
    }
    words = raw_words(rs, 4)
    drawn = [int(rs.randint(0, 2**32)) for _ in range(4)]
    assert drawn == words  # randint(0, 2**32) consumes exactly one raw 32-bit word
    raw = bytearray(b"".join(w.to_bytes(4, "little") for w in words))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return Create(
        request_id=str(uuid.UUID(bytes=bytes(raw))),
        trial_seed=int(rs.randint(0, 2**31)),
        hparams=hparams,
    )


@pytest.mark.parametrize("seed", [0, 1, 42, 2**32 - 1])
def test_first_trial_matches_draws_in_documented_order(seed: int) -> None:
    ops = make_search_method(RANDOM, SPACE, seed).initial_operations()
    assert ops[0] == expected_first_trial(seed)


def test_same_seed_same_trials_and_other_seed_differs() -> None:
    first = make_search_method(RANDOM, SPACE, 7).initial_operations()
    again = make_search_method(RANDOM, SPACE, 7).initial_operations()
    other = make_search_method(RANDOM, SPACE, 8).initial_operations()
    assert first == again
    assert [op.request_id for op in first] != [op.request_id for op in other]  # type: ignore[union-attr]


def test_request_ids_are_uuid4_and_seeds_below_2_pow_31() -> None:
    for op in make_search_method({**RANDOM, "max_trials": 50}, SPACE, 3).initial_operations():
        assert isinstance(op, Create)
        parsed = uuid.UUID(op.request_id)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert 0 <= op.trial_seed < 2**31


def test_sample_is_json_and_nested_keys_are_sorted() -> None:
    sample = sample_hparams(SPACE, np.random.RandomState(0))
    assert list(sample) == sorted(SPACE)
    assert list(sample["block"]) == ["act", "width"]
    assert json.loads(json.dumps(sample)) == sample


def test_const_values_are_copies() -> None:
    space: dict[str, Any] = {"cfg": {"type": "const", "val": {"a": [1, 2]}}, "x": {"a": 1}}
    sample = sample_hparams(space, np.random.RandomState(0))
    sample["cfg"]["a"].append(3)
    assert space["cfg"]["val"] == {"a": [1, 2]}
    assert sample["x"] == {"a": 1}  # a bare mapping is a nested group of const shorthands


def test_unknown_type_names_the_path() -> None:
    with pytest.raises(ValueError, match=r"hyperparameters\.g\.x\.type"):
        sample_hparams({"g": {"x": {"type": "normal"}}}, np.random.RandomState(0))


@given(
    lo=st.integers(-1000, 1000),
    span=st.integers(0, 50),
    seed=st.integers(0, 2**32 - 1),
)
def test_int_samples_are_inclusive_and_in_range(lo: int, span: int, seed: int) -> None:
    rs = np.random.RandomState(seed)
    space = {"n": {"type": "int", "minval": lo, "maxval": lo + span}}
    values = {sample_hparams(space, rs)["n"] for _ in range(40)}
    assert all(lo <= v <= lo + span for v in values)
    assert all(isinstance(v, int) for v in values)


@given(seed=st.integers(0, 2**32 - 1))
def test_double_and_log_in_range(seed: int) -> None:
    space = {
        "d": {"type": "double", "minval": -2.0, "maxval": 3.0},
        "l": {"type": "log", "minval": 1.0, "maxval": 3.0, "base": 2.0},
    }
    sample = sample_hparams(space, np.random.RandomState(seed))
    assert -2.0 <= sample["d"] < 3.0
    assert 2.0 <= sample["l"] <= 8.0


def test_samples_are_copies_the_next_trial_and_the_space_do_not_share() -> None:
    """Constant and categorical values that are lists: editing one trial's hparams changes
    neither the space nor another trial's."""
    space = {
        "bare": [[1, 2]],
        "cat": {"type": "categorical", "vals": [[[3, 4]]]},
        "const": {"type": "const", "val": [[5]]},
    }
    ops = make_search_method({**RANDOM, "max_trials": 2}, space, 0).initial_operations()
    first, second = (op.hparams for op in ops if isinstance(op, Create))
    for name in ("bare", "cat", "const"):
        first[name][0].append("edited")
    assert second == {"bare": [[1, 2]], "cat": [[3, 4]], "const": [[5]]}
    assert space == {
        "bare": [[1, 2]],
        "cat": {"type": "categorical", "vals": [[[3, 4]]]},
        "const": {"type": "const", "val": [[5]]},
    }
