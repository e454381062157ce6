"""``python3 -m trialkit.pytorch.dsat {binary,random,asha} config.yaml model_dir [options]``:
the options (Determined's flags and defaults) and the experiment config the search runs."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

from ..._merge import merge_into
from . import _defaults
from ._trials import smaller_is_better

PROG = "python3 -m trialkit.pytorch.dsat"


def _common_options() -> argparse.ArgumentParser:
    d = _defaults.ARG_DEFAULTS
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("config_path", help="the experiment config of one DeepSpeed trial (.yaml)")
    p.add_argument("model_dir", help="the model directory")
    p.add_argument("-i", "--include", nargs="+", help="accepted; use .trialkitignore instead")
    p.add_argument("-mt", "--max-trials", type=int, default=d["max_trials"],
                   help="trials to run, the profiling trial included")  # fmt: skip
    p.add_argument("-ms", "--max-slots", type=int, help="slots to use at once")
    p.add_argument("-mct", "--max-concurrent-trials", type=int,
                   default=d["max_concurrent_trials"], help="trials to run at once")  # fmt: skip
    p.add_argument("-m", "--metric", default=d["metric"],
                   choices=_defaults.SMALLER_IS_BETTER_METRICS + _defaults.LARGER_IS_BETTER_METRICS)  # fmt: skip
    p.add_argument("--run-full-experiment", action="store_true",
                   help="then create an experiment of the best config, at full length")  # fmt: skip
    p.add_argument("-z", "--zero-stages", type=int, nargs="+", default=d["zero_stages"],
                   choices=range(4), help="ZeRO stages to search")  # fmt: skip
    p.add_argument("--start-profile-step", "--start_profile-step", dest="start_profile_step",
                   type=int, default=d["start_profile_step"])  # fmt: skip
    p.add_argument("--end-profile-step", type=int, default=d["end_profile_step"])
    p.add_argument("-r", "--random-seed", "--random_seed", dest="random_seed", type=int,
                   default=d["random_seed"])  # fmt: skip
    p.add_argument("--search-runner-config", help="Determined's config of the search runner's "
                   "experiment: its max_restarts is used (the search runs in this process)")  # fmt: skip
    p.add_argument("--max-search-runner-restarts", type=int, default=5,
                   help="resume the search after a failure up to this many times")  # fmt: skip
    p.add_argument("--searcher-dir", help="where the search keeps its state and writes "
                   "best_ds_config.json (default: ./dsat_searcher_dir)")  # fmt: skip
    return p


def parser() -> argparse.ArgumentParser:
    """Determined's ``dsat`` parser: one sub-command per search method."""
    d = _defaults.ARG_DEFAULTS
    p = argparse.ArgumentParser(prog=PROG, description="DeepSpeed Autotune (Determined's dsat)")
    sub = p.add_subparsers(required=True, dest="search_method")
    common = _common_options()
    fmt = argparse.ArgumentDefaultsHelpFormatter
    rnd = sub.add_parser("random", parents=[common], formatter_class=fmt)
    rnd.add_argument("--trials-per-random-config", type=int, default=d["trials_per_random_config"])
    rnd.add_argument("--early-stopping", type=int, help="stop after N trials without a new best")
    binary = sub.add_parser("binary", parents=[common], formatter_class=fmt)
    binary.add_argument("--search-range-factor", type=float, default=d["search_range_factor"])
    asha = sub.add_parser("asha", parents=[common], formatter_class=fmt)
    asha.add_argument("--max-rungs", type=int, default=d["max_rungs"])
    asha.add_argument("--min-binary-search-trials", type=int,
                      default=d["min_binary_search_trials"])  # fmt: skip
    asha.add_argument("--asha-early-stopping", type=int, default=d["asha_early_stopping"])
    asha.add_argument("--divisor", type=int, default=d["divisor"])
    asha.add_argument("--search-range-factor", type=float, default=d["search_range_factor"])
    return p


def check_config(config: dict[str, Any], model_dir: Path) -> None:
    """ValueError, one line, for a config dsat cannot search with."""
    hparams = config.get("hyperparameters") or {}
    path = hparams.get(_defaults.CONFIG_KEY)
    if not isinstance(path, str):
        raise ValueError(
            f"hyperparameters.{_defaults.CONFIG_KEY}: missing; dsat needs the path of the "
            "DeepSpeed config file (relative to the model directory)"
        )
    if not (model_dir / path).is_file():
        raise ValueError(f"hyperparameters.{_defaults.CONFIG_KEY}: {path} not found in {model_dir}")


def dsat_experiment_config(config: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The submitted config as the search's experiment: a custom searcher on ``--metric``, and
    hyperparameters that switch DeepSpeed's autotuning on for the profile steps."""
    out = copy.deepcopy(config)
    out["searcher"] = {
        "name": "custom",
        "metric": args.metric,
        "smaller_is_better": smaller_is_better(args.metric),
        "unit": "batches",  # a Trial class trains each operation's length in batches (steps)
    }
    out["description"] = " - ".join(
        d for d in ("dsat " + args.search_method, config.get("description")) if d
    )
    hparams = out.setdefault("hyperparameters", {})
    merge_into(
        hparams.setdefault(_defaults.OVERWRITE_KEY, {}),
        {
            "autotuning": {
                "enabled": True,
                "start_profile_step": args.start_profile_step,
                "end_profile_step": args.end_profile_step,
            }
        },
    )
    hparams[_defaults.USE_DSAT_MODE_KEY] = True
    return out
