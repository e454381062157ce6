"""Run a dsat search from this process: create the experiment on the master (started in the
background if none is running) and drive it with ``LocalSearchRunner`` until it ends; the best
DeepSpeed config is then in ``<searcher_dir>/method/best_ds_config.json``. With
``--run-full-experiment``, then create the experiment of the best config."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...client import LocalSearchRunner
from . import _defaults
from ._cli import check_config, dsat_experiment_config, parser
from ._full_experiment import full_experiment_config
from ._methods import SEARCH_METHOD_CLASSES, BaseDSATSearchMethod
from ._search_runner_config import search_runner_restarts

logger = logging.getLogger("trialkit.dsat")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from ...config import ConfigError, read_config_file

    model_dir = Path(args.model_dir).resolve()
    args.model_dir = str(model_dir)
    try:
        restarts = args.max_search_runner_restarts
        if args.search_runner_config:
            runner_config = _read_mapping(args.search_runner_config, read_config_file)
            restarts = search_runner_restarts(runner_config, restarts)
        config = _read_mapping(args.config_path, read_config_file)
        check_config(config, model_dir)
        exp_config = dsat_experiment_config(config, args)
        method = SEARCH_METHOD_CLASSES[args.search_method](args, exp_config)
    except (ValueError, OSError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    searcher_dir = Path(args.searcher_dir or "dsat_searcher_dir").resolve()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    experiment_id = run_with_restarts(
        lambda: LocalSearchRunner(method, searcher_dir, poll_seconds=2.0).run(
            exp_config, model_dir
        ),
        restarts,
    )
    print(f"Created experiment {experiment_id}")
    best = searcher_dir / "method" / _defaults.BEST_CONFIG_FILE
    if not best.exists():
        print("error: no trial of the search completed; no best config", file=sys.stderr)
        return 1
    print(f"best DeepSpeed config: {best}")
    if args.run_full_experiment:
        return _run_full_experiment(method, config, args, experiment_id)
    return 0


def _read_mapping(path: str, read: Callable[[str], Any]) -> dict[str, Any]:
    config = read(path)
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    return config


def run_with_restarts(run: Callable[[], int], restarts: int) -> int:
    """``run()``, again up to ``restarts`` times after a failure: the runner resumes the same
    experiment from its searcher directory (Determined restarts its search-runner trial)."""
    for attempt in range(restarts + 1):
        try:
            return run()
        except Exception as e:
            if attempt == restarts:
                raise
            logger.warning(
                "dsat: the search runner failed (%s: %s); restart %d of %d",
                type(e).__name__, e, attempt + 1, restarts,
            )  # fmt: skip
    raise AssertionError("unreachable")


def _run_full_experiment(
    method: BaseDSATSearchMethod, submitted: dict[str, Any], args: argparse.Namespace, search: int
) -> int:
    """Create the experiment of the submitted config with the best trial's hyperparameters, on
    the master the search ran on (its model directory packed as for the search)."""
    import base64

    from ..._home import trialkit_home
    from ..._modeldir import pack
    from ...client import client_for
    from ...config import load_config

    best = method.trial_tracker.best_trial
    home = trialkit_home()
    client = client_for(home)
    if best is None or client is None:
        why = "no trial reported a metric" if best is None else f"no master is running for {home}"
        print(f"error: --run-full-experiment: {why}", file=sys.stderr)
        return 1
    config = load_config(full_experiment_config(submitted, best.hparams, search))
    model_def = base64.b64encode(pack(args.model_dir)).decode()
    created = client.create_experiment(config.as_dict(), model_def=model_def, python=sys.executable)
    print(f"Created experiment {created.experiment.id} (the best DeepSpeed config, full length)")
    return 0
