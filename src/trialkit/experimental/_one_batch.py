"""``test_one_batch``: Determined's smoke test of a Trial class (one batch, one validation,
one checkpoint), run locally."""

from __future__ import annotations

from typing import Any


def _raw_hparams(config: dict[str, Any]) -> dict[str, Any]:
    """The config's hyperparameters as written (not sampled, as in Determined); a ``const``
    spec gives its value."""
    out = {}
    for name, spec in (config.get("hyperparameters") or {}).items():
        if isinstance(spec, dict) and spec.get("type") == "const":
            out[name] = spec.get("val")
        else:
            out[name] = spec
    return out


def test_one_batch(trial_class: type[Any], config: dict[str, Any] | None = None) -> Any:
    """Train a PyTorchTrial for one batch in test mode (validate on one batch, checkpoint) and
    return the trial; other Trial types are not supported here.

    Unlike Determined (no seed locally, so ``get_trial_seed()`` raises), the context is seeded
    with ``reproducibility.experiment_seed`` (default 0)."""
    from trialkit import pytorch

    if not (isinstance(trial_class, type) and issubclass(trial_class, pytorch.PyTorchTrial)):
        raise TypeError(
            f"test_one_batch supports PyTorchTrial subclasses, not {trial_class!r}; run other "
            "Trials with a short searcher.max_length under the master instead"
        )
    config = dict(config or {})
    seed = int((config.get("reproducibility") or {}).get("experiment_seed") or 0)
    with pytorch.init(hparams=_raw_hparams(config), exp_conf=config, seed=seed) as context:
        trial = trial_class(context)
        pytorch.Trainer(trial, context).fit(max_length=pytorch.Batch(1), test_mode=True)
    return trial


test_one_batch.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
