"""The searcher RNG: numpy's legacy MT19937, drawn in the order Determined's master draws.

``np.random.RandomState(seed)`` is seeded like the master's ``nprand`` (init_genrand), so a Create
drawn here matches the master's: the hyperparameter sample first, then 16 request-id bytes, then the
trial seed. Request-id words come from ``randint(0, 2**32, size=4, dtype=uint32)``: for that full
32-bit range numpy returns each raw MT19937 output as is (no mask, no rejection), one word per
element, exactly like four calls of Go's ``Uint32()`` (and like four scalar ``randint(0, 2**32)``
calls). The seed is ``randint(0, 2**31)``: one word masked to 31 bits, as Go's bounded draw.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np

RandomState = np.random.RandomState

_UINT32_RANGE = 2**32
_SEED_RANGE = 2**31


def new_rng(seed: int) -> RandomState:
    """The searcher RNG for an experiment seed (a uint32)."""
    return np.random.RandomState(seed)


def draw_uint32s(rng: RandomState, count: int) -> list[int]:
    """``count`` raw 32-bit words, like ``count`` calls of Go's ``nprand.Uint32``."""
    return [int(w) for w in rng.randint(0, _UINT32_RANGE, size=count, dtype=np.uint32)]


def draw_request_id(rng: RandomState) -> str:
    """A UUIDv4 string built from four little-endian 32-bit words."""
    raw = bytearray(b"".join(w.to_bytes(4, "little") for w in draw_uint32s(rng, 4)))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return str(uuid.UUID(bytes=bytes(raw)))


def draw_trial_seed(rng: RandomState) -> int:
    """A trial seed in [0, 2**31)."""
    return int(rng.randint(0, _SEED_RANGE))


def rng_state(rng: RandomState) -> dict[str, Any]:
    """The RNG state as JSON-serializable data."""
    _, key, pos, has_gauss, cached = rng.get_state(legacy=True)  # type: ignore[misc]
    return {
        "key": [int(k) for k in key],
        "pos": int(pos),
        "has_gauss": int(has_gauss),
        "cached_gaussian": float(cached),
    }


def restore_rng(state: Mapping[str, Any]) -> RandomState:
    """A RandomState continuing exactly where ``rng_state`` left off."""
    rng = np.random.RandomState()
    key = np.asarray(state["key"], dtype=np.uint32)
    rng.set_state(
        (
            "MT19937",
            key,
            int(state["pos"]),
            int(state["has_gauss"]),
            float(state["cached_gaussian"]),
        )
    )
    return rng
