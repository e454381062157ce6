"""``--run-full-experiment``: the experiment of the best config once the search has ended."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._merge import merged
from . import _defaults


def full_experiment_config(
    submitted: Mapping[str, Any], best_hparams: Mapping[str, Any], search_experiment_id: int
) -> dict[str, Any]:
    """The submitted config with the best trial's hyperparameters merged into its own (as
    Determined does), less what switched DeepSpeed's autotuning on: it trains at full length."""
    config = merged(submitted, {"hyperparameters": best_hparams})
    hparams = config["hyperparameters"]
    hparams.pop(_defaults.USE_DSAT_MODE_KEY, None)
    overwrite = hparams.get(_defaults.OVERWRITE_KEY)
    if isinstance(overwrite, dict):
        overwrite.pop("autotuning", None)
    config["description"] = " - ".join(
        d
        for d in (
            f"dsat best config (experiment {search_experiment_id})",
            submitted.get("description"),
        )
        if d
    )
    return config
