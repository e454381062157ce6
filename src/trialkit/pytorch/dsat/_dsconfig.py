"""A trial's DeepSpeed config under dsat: the config file its hyperparameters name, with the
search's overrides merged in, and the batch-size fields kept consistent."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..._merge import merged
from . import _defaults


def get_ds_config_from_hparams(
    hparams: Mapping[str, Any], base_dir: str | os.PathLike[str] = "."
) -> dict[str, Any]:
    """The DeepSpeed config file ``hparams['deepspeed_config']`` (relative to ``base_dir``) with
    ``hparams['overwrite_deepspeed_args']`` merged over it (Determined's function of the name)."""
    if _defaults.CONFIG_KEY not in hparams:
        raise ValueError(
            f"hyperparameters.{_defaults.CONFIG_KEY}: missing; dsat needs the path of the "
            "DeepSpeed config file (relative to the model directory)"
        )
    path = Path(base_dir) / str(hparams[_defaults.CONFIG_KEY])
    try:
        base = json.loads(path.read_text())
    except OSError as e:
        raise FileNotFoundError(f"DeepSpeed config {path}: cannot be read ({e.strerror})") from None
    except ValueError as e:
        raise ValueError(f"DeepSpeed config {path}: not JSON ({e})") from None
    return merged(base, hparams.get(_defaults.OVERWRITE_KEY) or {})


def batch_config(ds_config: Mapping[str, Any], slots: int) -> dict[str, int]:
    """``train_batch_size`` = micro-batch × gradient accumulation × slots (DeepSpeed refuses a
    config where they disagree); ``"auto"`` accumulation (Hugging Face) counts as 1."""
    mbs = int(ds_config["train_micro_batch_size_per_gpu"])
    gas = ds_config.get("gradient_accumulation_steps", _defaults.GAS_DEFAULT)
    gas = 1 if gas == "auto" else int(gas)
    return {
        "train_batch_size": mbs * gas * slots,
        "train_micro_batch_size_per_gpu": mbs,
        "gradient_accumulation_steps": gas,
    }


def random_zero_config(stage: int, rng: random.Random) -> dict[str, Any]:
    """A ``zero_optimization`` section for ``stage`` with its searched options drawn at random
    (a range's value log-uniformly, as bucket sizes span orders of magnitude)."""
    config: dict[str, Any] = {"stage": stage}
    for level in range(1, stage + 1):
        for name, choices in _defaults.ZERO_SEARCH_SPACE[level].items():
            if all(isinstance(c, bool) for c in choices):
                config[name] = rng.choice(choices)
            else:
                lo, hi = choices
                config[name] = int(lo * (hi / lo) ** rng.random())
    return config
