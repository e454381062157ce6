"""The config ``trialkit t continue`` (and the web UI's Continue trial) derives from a trial's
experiment: the trial's values as constants, searcher single with the source's metric and
length, warm-started from the checkpoint; everything else as the experiment had it."""

from __future__ import annotations

from trialkit.cli._continue import const_hparams, continued_config
from trialkit.rest import TrialOut, TrialState

ASHA = {
    "name": "search",
    "entrypoint": "model_def:Trial",
    "hyperparameters": {"lr": {"type": "log", "minval": -4, "maxval": -1}, "layers": 2},
    "searcher": {
        "name": "adaptive_asha",
        "metric": "val_loss",
        "smaller_is_better": True,
        "max_length": {"batches": 800},
        "max_trials": 16,
        "source_trial_id": 3,
    },
    "max_restarts": 2,
}


def _trial(hparams: dict[str, object]) -> TrialOut:
    return TrialOut(
        **{
            **dict.fromkeys(TrialOut.__dataclass_fields__),
            "id": 7,
            "experiment_id": 2,
            "hparams": hparams,
            "state": TrialState.COMPLETED,
        }
    )


def test_the_trial_values_become_constants_nested_ones_nested() -> None:
    assert const_hparams({"lr": 0.01, "opt": {"momentum": 0.9}, "sizes": [1, 2]}) == {
        "lr": {"type": "const", "val": 0.01},
        "opt": {"momentum": {"type": "const", "val": 0.9}},
        "sizes": {"type": "const", "val": [1, 2]},
    }


def test_a_search_becomes_one_warm_started_trial_of_the_same_length() -> None:
    out = continued_config(ASHA, _trial({"lr": 0.003, "layers": 2}), "ab12")
    assert out["searcher"] == {
        "name": "single",
        "metric": "val_loss",
        "smaller_is_better": True,
        "max_length": {"batches": 800},
        "source_checkpoint_uuid": "ab12",  # not the source's own warm start
    }
    assert out["hyperparameters"] == {
        "lr": {"type": "const", "val": 0.003},
        "layers": {"type": "const", "val": 2},
    }
    assert out["description"] == "continues trial 7 of experiment 2 from checkpoint ab12"
    assert {k: out[k] for k in ("name", "entrypoint", "max_restarts")} == {
        "name": "search",
        "entrypoint": "model_def:Trial",
        "max_restarts": 2,
    }
    assert ASHA["searcher"]["name"] == "adaptive_asha"  # the experiment's config is not changed
