"""Run a dsat search from this process: create the experiment on the master (started in the
background if none is running) and drive it with ``LocalSearchRunner`` until it ends; the best
DeepSpeed config is then in ``<searcher_dir>/method/best_ds_config.json``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from ...client import LocalSearchRunner
from . import _defaults
from ._cli import check_config, dsat_experiment_config, parser
from ._methods import SEARCH_METHOD_CLASSES

logger = logging.getLogger("trialkit.dsat")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from ...config import ConfigError, read_config_file

    model_dir = Path(args.model_dir).resolve()
    args.model_dir = str(model_dir)
    try:
        if args.search_runner_config or args.run_full_experiment:
            flag = (
                "--search-runner-config" if args.search_runner_config else "--run-full-experiment"
            )
            raise ValueError(f"{flag} is not supported by trialkit's dsat (see docs/deepspeed.md)")
        config = read_config_file(args.config_path)
        if not isinstance(config, dict):
            raise ValueError(f"{args.config_path}: expected a mapping at the top level")
        check_config(config, model_dir)
        exp_config = dsat_experiment_config(config, args)
        method = SEARCH_METHOD_CLASSES[args.search_method](args, exp_config)
    except (ValueError, OSError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    searcher_dir = Path(args.searcher_dir or "dsat_searcher_dir").resolve()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    runner = LocalSearchRunner(method, searcher_dir, poll_seconds=2.0)
    experiment_id = runner.run(exp_config, model_dir)
    print(f"Created experiment {experiment_id}")
    best = searcher_dir / "method" / _defaults.BEST_CONFIG_FILE
    if best.exists():
        print(f"best DeepSpeed config: {best}")
        return 0
    print("error: no trial of the search completed; no best config", file=sys.stderr)
    return 1
