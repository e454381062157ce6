""" "Is this the best validation?" answered in the reply to the batch that carried it (Determined's
checkpoint policy ``best``): a validation is the best when its searcher metric is a number
strictly better than every validation of its experiment stored before it (none before: best).
The trial then needs no request of its own to ask for the experiment's best."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...store import Store
from ..search._experiment_config import searcher_config_of


@dataclass
class BestSoFar:
    """The experiment's searcher metric and its best value before a batch."""

    metric: str | None
    smaller_is_better: bool
    best: float | None

    @classmethod
    def before_batch(cls, store: Store, trial_id: int) -> BestSoFar:
        """The best of the validations stored so far (read before the batch is stored)."""
        exp = store.get_experiment(store.get_trial(trial_id).experiment_id)
        searcher = searcher_config_of(exp)
        if not searcher.metric:
            return cls(None, searcher.smaller_is_better, None)
        best = store.best_validation(
            metric=searcher.metric,
            smaller_is_better=searcher.smaller_is_better,
            experiment_id=exp.id,
        )
        return cls(searcher.metric, searcher.smaller_is_better, best)

    def verdicts(self, validations: Iterable[Mapping[str, Any]]) -> list[bool]:
        """Whether each validation (in order) is the best so far; each best one raises the bar."""
        out = []
        for metrics in validations:
            value = _number(metrics.get(self.metric)) if self.metric else None
            better = value is not None and (
                self.best is None
                or (value < self.best if self.smaller_is_better else value > self.best)
            )
            if better:
                self.best = value
            out.append(better)
        return out


def _number(value: Any) -> float | None:
    """``value`` when it is a comparable number (not a bool, not NaN), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)
