"""DeepSpeed Autotune (Determined 0.24+'s ``det.pytorch.dsat``): profile the model in a first
trial, then search ZeRO stage × micro-batch size with a custom searcher (``binary``, ``random``
or ``asha``) and write the best DeepSpeed config.

``python3 -m trialkit.pytorch.dsat {binary,random,asha} config.yaml model_dir`` (or
``determined.pytorch.dsat``); see docs/deepspeed.md for what is supported.
"""

from ._defaults import BEST_CONFIG_FILE, BEST_METRICS_FILE
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
    "get_ds_config_from_hparams",
    "get_hf_args_with_overwrites",
    "trial_reporting_context",
]
