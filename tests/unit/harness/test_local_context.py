"""What Determined's ``TrialContext.from_config(config)`` builds a context from, for the PyTorch
and Keras harnesses (harness/_local_context.py): a detached one-worker core, hyperparameters drawn
once from the config's space with the experiment seed, else a time-based seed."""

from __future__ import annotations

import time
from typing import Any

import pytest

from trialkit.core import DummyDistributedContext
from trialkit.harness import local_context_args
from trialkit.searcher import RandomState, sample_hparams

SPACE: dict[str, Any] = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
    "layers": {"type": "int", "minval": 1, "maxval": 1000},
    "optimizer": "adam",
}


def test_hyperparameters_are_drawn_with_the_experiment_seed() -> None:
    config = {"hyperparameters": SPACE, "reproducibility": {"experiment_seed": 7}}
    args = local_context_args(config)
    assert args["seed"] == 7
    assert args["hparams"] == sample_hparams(SPACE, RandomState(7))
    assert args["hparams"] != sample_hparams(SPACE, RandomState(8))
    assert args["hparams"]["optimizer"] == "adam" and 1 <= args["hparams"]["layers"] <= 1000
    assert args["exp_conf"] == config and args["exp_conf"] is not config  # a copy


def test_without_an_experiment_seed_the_seed_is_the_time() -> None:
    before = int(time.time()) % 2**31
    args = local_context_args({"hyperparameters": SPACE, "reproducibility": None})
    after = int(time.time()) % 2**31
    assert type(args["seed"]) is int and before <= args["seed"] <= after
    assert args["hparams"] == sample_hparams(SPACE, RandomState(args["seed"]))
    assert local_context_args({})["hparams"] == {}  # no space: no hyperparameters


def test_the_core_context_is_one_detached_worker() -> None:
    core_context = local_context_args({})["core_context"]
    assert isinstance(core_context.distributed, DummyDistributedContext)
    assert (core_context.distributed.rank, core_context.distributed.size) == (0, 1)
    assert core_context.info is None  # no master: no cluster info


def test_a_config_that_is_not_a_dict_is_refused_naming_it() -> None:
    with pytest.raises(
        TypeError,
        match=r"^from_config\(config\): expected the experiment config as a dict, got 'cfg\.yaml'$",
    ):
        local_context_args("cfg.yaml")  # type: ignore[arg-type]
