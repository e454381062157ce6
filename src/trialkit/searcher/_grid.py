"""grid search: the Cartesian product of per-hyperparameter axes, handed out from the end.

Axes follow sorted names, depth first through nested groups; the first axis varies slowest. Points
are decoded from their index on demand, so a large grid is never materialized by the search.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from trialkit.searcher._ops import ExitedReason, Operation
from trialkit.searcher._random import initial_count, trial_ops
from trialkit.searcher._sampling import is_group
from trialkit.searcher._strategy import ProgressBook, Strategy, TrialSource

Axis = tuple[tuple[str, ...], list[Any]]  # (path of names, values)


def round_half_away(x: float) -> int:
    """Go's ``math.Round``: halves round away from zero (Python's ``round`` rounds to even)."""
    whole = math.trunc(x)
    if abs(x - whole) >= 0.5:  # exact: x - trunc(x) never rounds
        whole += 1 if x > 0 else -1
    return whole


def axis_values(leaf: Any, path: str = "") -> list[Any]:
    """The grid values of one hyperparameter leaf."""
    if not isinstance(leaf, Mapping):
        return [leaf]
    kind = leaf["type"]
    if kind == "const":
        return [leaf["val"]]
    if kind == "categorical":
        return list(leaf["vals"])
    count = leaf.get("count")
    if count is None or isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(
            f"hyperparameters.{path}.count: got {count!r}; grid search needs an int >= 1"
            f" on every {kind} hyperparameter"
        )
    if kind == "int":
        return _int_values(int(leaf["minval"]), int(leaf["maxval"]), count)
    if kind == "double":
        return _float_values(float(leaf["minval"]), float(leaf["maxval"]), count)
    if kind == "log":
        base = float(leaf["base"])
        return [base**x for x in _float_values(float(leaf["minval"]), float(leaf["maxval"]), count)]
    raise ValueError(f"hyperparameters.{path}.type: got {kind!r}; expected a known type")


def _int_values(lo: int, hi: int, count: int) -> list[int]:
    count = min(count, hi - lo + 1)
    if count == 1:
        return [round_half_away((lo + hi) / 2.0)]
    return [round_half_away(lo + (i * (hi - lo)) / (count - 1)) for i in range(count)]


def _float_values(lo: float, hi: float, count: int) -> list[float]:
    if count == 1:
        return [(lo + hi) / 2.0]
    return [lo + i * (hi - lo) / (count - 1) for i in range(count)]


def grid_axes(hyperparameters: Mapping[str, Any]) -> list[Axis]:
    """Axes in sorted-name order, nested groups expanded in place; an empty group is ``[{}]``."""
    axes: list[Axis] = []
    _collect_axes(hyperparameters, (), axes)
    return axes


def _collect_axes(group: Mapping[str, Any], prefix: tuple[str, ...], axes: list[Axis]) -> None:
    for name in sorted(group):
        node, path = group[name], (*prefix, name)
        if is_group(node) and node:
            _collect_axes(node, path, axes)
        elif is_group(node):
            axes.append((path, [{}]))
        else:
            axes.append((path, axis_values(node, ".".join(path))))


def grid_size(axes: list[Axis]) -> int:
    """Number of grid points; no hyperparameters at all means no points."""
    return math.prod(len(values) for _, values in axes) if axes else 0


def grid_point(axes: list[Axis], index: int) -> dict[str, Any]:
    """Point ``index`` of the product, first axis slowest."""
    digits = []
    for _, values in reversed(axes):
        index, digit = divmod(index, len(values))
        digits.append(digit)
    point: dict[str, Any] = {}
    for (path, values), digit in zip(axes, reversed(digits), strict=True):
        node = point
        for name in path[:-1]:
            node = node.setdefault(name, {})
        node[path[-1]] = copy.deepcopy(values[digit])
    return point


def grid_points(hyperparameters: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every grid point in product order (the search hands them out from the end)."""
    axes = grid_axes(hyperparameters)
    return [grid_point(axes, i) for i in range(grid_size(axes))]


class GridSearch(Strategy):
    """One trial per grid point, last point first; InvalidHP trials are not replaced."""

    def __init__(
        self, hyperparameters: Mapping[str, Any], max_concurrent: int, length: int | None
    ) -> None:
        self.axes = grid_axes(hyperparameters)
        self.size = grid_size(self.axes)
        self.max_concurrent = max_concurrent
        self.length = length
        self.remaining = self.size  # points not yet handed out: indexes [0, remaining)

    def initial(self, trials: TrialSource) -> list[Operation]:
        ops: list[Operation] = []
        for _ in range(initial_count(self.size, self.max_concurrent)):
            ops += self._next_point(trials)
        return ops

    def validation(
        self, trials: TrialSource, request_id: str, metrics: Mapping[str, Any]
    ) -> list[Operation]:
        return []

    def exited_early(
        self, trials: TrialSource, request_id: str, reason: ExitedReason
    ) -> list[Operation]:
        return []

    def closed(self, trials: TrialSource, request_id: str) -> list[Operation]:
        return self._next_point(trials) if self.remaining > 0 else []

    def progress(self, book: ProgressBook) -> float:
        if self.length is None:
            return book.mean()  # 0.38: mean over trials, as Determined 0.38 computes it
        return book.fraction(self.size, float(self.length))  # 0.37: units / (L × trials)

    def state(self) -> dict[str, Any]:
        return {"remaining": self.remaining}

    def restore(self, state: Mapping[str, Any]) -> None:
        self.remaining = int(state["remaining"])

    def _next_point(self, trials: TrialSource) -> list[Operation]:
        self.remaining -= 1
        return trial_ops(trials, self.length, grid_point(self.axes, self.remaining))
