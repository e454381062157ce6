"""Run the custom searcher in this process (like Determined 0.37's LocalSearchRunner): it
creates the experiment, answers the master's searcher events, and keeps its own state in
searcher_dir/ (run it again after a crash to continue the same experiment)."""

import argparse
import logging
import pathlib

from searcher import HalfwayRandomSearch

from trialkit import searcher

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    here = pathlib.Path(__file__).resolve().parent
    parser = argparse.ArgumentParser()
    parser.add_argument("--searcher-dir", type=pathlib.Path, default=here / "searcher_dir")
    parser.add_argument("--max-concurrent", type=int, default=2)
    args = parser.parse_args()
    method = HalfwayRandomSearch(
        max_trials=6, max_length=20, max_concurrent=args.max_concurrent, seed=1
    )
    runner = searcher.LocalSearchRunner(method, searcher_dir=args.searcher_dir)
    experiment_id = runner.run(here / "custom_runner.yaml", model_dir=here)
    print(f"experiment {experiment_id} finished")
