"""Names, files and defaults of DeepSpeed Autotune, as Determined 0.24+'s ``dsat`` has them."""

from __future__ import annotations

from typing import Any

SEARCH_METHODS = ("binary", "random", "asha")

#: Hyperparameter naming the DeepSpeed config file (relative to the model directory).
CONFIG_KEY = "deepspeed_config"
#: Hyperparameter holding the values each trial merges over that file.
OVERWRITE_KEY = "overwrite_deepspeed_args"
#: Hyperparameter that tells a harness the trial runs under dsat.
USE_DSAT_MODE_KEY = "_use_dsat_mode"

#: Files DeepSpeed writes when its autotuning profile ends a trial (in the working directory).
MODEL_INFO_PROFILING_PATH = "model_info.json"
AUTOTUNING_RESULTS_PATH = "autotuning_metric.json"
#: Files the search writes into its state directory once a trial has the best metric.
BEST_CONFIG_FILE = "best_ds_config.json"
BEST_METRICS_FILE = "best_ds_metrics.json"

SMALLER_IS_BETTER_METRICS = ("forward", "backward", "latency")
LARGER_IS_BETTER_METRICS = ("throughput", "FLOPS_per_gpu")

GAS_DEFAULT = 1

#: Merged into the profiling trial's DeepSpeed config: one micro-batch, DeepSpeed's model-info
#: profile (it writes model_info.json and exits).
MODEL_INFO_PROFILE_DS_CONFIG: dict[str, Any] = {
    "train_micro_batch_size_per_gpu": 1,
    "autotuning": {
        "enabled": True,
        "model_info_path": MODEL_INFO_PROFILING_PATH,
        "model_info": {"profile": True},
    },
}

#: ZeRO options searched per stage (each stage adds to the ones below it); a pair of ints is a
#: range's ends, other lists are choices. Reduce-bucket sizes are left to DeepSpeed.
_RANGE = [10**7, 10**10]
ZERO_SEARCH_SPACE: dict[int, dict[str, list[Any]]] = {
    0: {},
    1: {"allgather_bucket_size": _RANGE},
    2: {
        "overlap_comm": [True, False],
        "reduce_scatter": [True, False],
        "contiguous_gradients": [True, False],
    },
    3: {
        "stage3_max_live_parameters": [10**8, 10**10],
        "stage3_max_reuse_distance": [10**8, 10**10],
    },
}

ARG_DEFAULTS: dict[str, Any] = {
    "max_trials": 64,
    "max_concurrent_trials": 16,
    "zero_stages": [1, 2, 3],
    "trials_per_random_config": 5,
    "start_profile_step": 3,
    "end_profile_step": 5,
    "metric": "FLOPS_per_gpu",
    "random_seed": 42,
    "search_range_factor": 1.0,
    "divisor": 2,
    "min_binary_search_trials": 3,
    "max_rungs": 5,
    "asha_early_stopping": 0,
}
