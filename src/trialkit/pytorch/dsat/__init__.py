"""DeepSpeed Autotune (Determined 0.24+'s ``det.pytorch.dsat``): profile the model in a first
trial, then search ZeRO stage × micro-batch size with a custom searcher (``binary``, ``random``
or ``asha``) and write the best DeepSpeed config.

``python3 -m trialkit.pytorch.dsat {binary,random,asha} config.yaml model_dir`` (or
``determined.pytorch.dsat``); see docs/deepspeed.md for what is supported.
"""

from ._cli import parser as get_full_parser
from ._defaults import BEST_CONFIG_FILE, BEST_METRICS_FILE
from ._dsconfig import batch_config as get_batch_config_from_mbs_gas_and_slots
from ._dsconfig import get_ds_config_from_hparams
from ._hf import get_hf_args_with_overwrites
from ._methods import (
    SEARCH_METHOD_CLASSES,
    ASHADSATSearchMethod,
    BaseDSATSearchMethod,
    BinarySearchDSATSearchMethod,
    RandomDSATSearchMethod,
)
from ._profile import ModelProfile, ProfileError
from ._report import dsat_reporting_context, trial_reporting_context
from ._trials import (
    DSATModelProfileInfoTrial,
    DSATSearchData,
    DSATTrial,
    DSATTrialTracker,
    smaller_is_better,
)

__all__ = [
    "ASHADSATSearchMethod",
    "BEST_CONFIG_FILE",
    "BEST_METRICS_FILE",
    "BaseDSATSearchMethod",
    "BinarySearchDSATSearchMethod",
    "DSATModelProfileInfoTrial",
    "DSATSearchData",
    "DSATTrial",
    "DSATTrialTracker",
    "ModelProfile",
    "ProfileError",
    "RandomDSATSearchMethod",
    "SEARCH_METHOD_CLASSES",
    "dsat_reporting_context",
    "get_batch_config_from_mbs_gas_and_slots",
    "get_ds_config_from_hparams",
    "get_full_parser",
    "get_hf_args_with_overwrites",
    "smaller_is_better",
    "trial_reporting_context",
]
