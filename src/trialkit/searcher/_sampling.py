"""Random hyperparameter samples, drawn in the master's order (sorted names, depth first).

Leaves are the normalized forms: const, int, double, log, categorical; a mapping without ``type`` is
a nested group. Determined samples nested groups in Go map order (not reproducible); trialkit sorts
their keys too, so nested samples are reproducible here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from trialkit.searcher._rng import RandomState

LEAF_TYPES = ("const", "int", "double", "log", "categorical")


def is_group(node: Any) -> bool:
    """A nested group: a mapping with no ``type`` key."""
    return isinstance(node, Mapping) and "type" not in node


def sample_hparams(hyperparameters: Mapping[str, Any], rng: RandomState) -> dict[str, Any]:
    """One random point of the space; names are visited in sorted order, groups recursively."""
    return {
        name: _sample_node(hyperparameters[name], rng, name) for name in sorted(hyperparameters)
    }


def _sample_node(node: Any, rng: RandomState, path: str) -> Any:
    if is_group(node):
        return {key: _sample_node(node[key], rng, f"{path}.{key}") for key in sorted(node)}
    if not isinstance(node, Mapping):
        return copy.deepcopy(node)  # a bare value is const shorthand
    return _sample_leaf(node, rng, path)


def _sample_leaf(leaf: Mapping[str, Any], rng: RandomState, path: str) -> Any:
    kind = leaf["type"]
    if kind == "const":
        return copy.deepcopy(leaf["val"])
    if kind == "int":
        lo, hi = int(leaf["minval"]), int(leaf["maxval"])
        return lo + int(rng.randint(0, hi - lo + 1))
    if kind == "double":
        return uniform(rng, float(leaf["minval"]), float(leaf["maxval"]))
    if kind == "log":
        exponent = uniform(rng, float(leaf["minval"]), float(leaf["maxval"]))
        return float(leaf["base"]) ** exponent
    if kind == "categorical":
        vals = leaf["vals"]
        return copy.deepcopy(vals[int(rng.randint(0, len(vals)))])
    raise ValueError(f"hyperparameters.{path}.type: got {kind!r}; expected one of {LEAF_TYPES}")


def uniform(rng: RandomState, lo: float, hi: float) -> float:
    """``lo + (hi - lo) * u`` with u from ``random_sample()``, as Go's ``Uniform`` computes it."""
    return lo + (hi - lo) * float(rng.random_sample())
