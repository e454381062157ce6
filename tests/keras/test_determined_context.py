"""Issue 32 items 3 and 4 for Keras, as Determined-shaped user code: ``TFKerasTrialContext.env``
(old model code reads and sets it: ``self.context.env.container_gpus = []``) and Determined's
local debugging constructor ``TFKerasTrialContext.from_config(config)``."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tensorflow", reason="TFKerasTrial needs tensorflow")


@pytest.fixture(scope="module")
def det() -> ModuleType:
    """``import determined`` through trialkit's alias (no Determined installed)."""
    from trialkit import _alias

    if not _alias.install():
        pytest.skip("the determined alias is switched off here")
    import determined

    return determined


CONFIG = {
    "hyperparameters": {
        "global_batch_size": 4,
        "units": {"type": "int", "minval": 2, "maxval": 5},
        "activation": {"type": "categorical", "vals": ["relu", "tanh"]},
    },
    "reproducibility": {"experiment_seed": 3},
    "data": {"records": 16},
}


def _one_var_trial(det: ModuleType) -> type:
    """A Determined 0.17-style TFKerasTrial: it forces CPU through ``context.env`` in
    ``__init__`` and reads its hyperparameters from ``context.env.hparams``."""
    from trialkit.keras._keras import keras_module

    keras = keras_module()

    class OneVarTrial(det.keras.TFKerasTrial):
        def __init__(self, context: Any) -> None:
            self.context = context
            self.context.env.container_gpus = []  # the line old checkpoints' code has
            self.units = context.env.hparams["units"]

        def build_model(self) -> Any:
            model = keras.Sequential(
                [keras.Input((3,)), keras.layers.Dense(self.units), keras.layers.Dense(1)]
            )
            model = self.context.wrap_model(model)
            model.compile(optimizer=self.context.wrap_optimizer(keras.optimizers.SGD(0.01)),
                          loss="mse")  # fmt: skip
            return model

        def _data(self) -> tuple[np.ndarray, np.ndarray]:
            n = self.context.get_data_config()["records"]
            return np.ones((n, 3), "float32"), np.zeros((n, 1), "float32")

        def build_training_data_loader(self) -> Any:
            return self._data()

        def build_validation_data_loader(self) -> Any:
            return self._data()

    return OneVarTrial


def test_tfkeras_context_from_config_runs_determineds_local_recipe(det: ModuleType) -> None:
    context = det.keras.TFKerasTrialContext.from_config(CONFIG)
    assert isinstance(context, det.keras.TFKerasTrialContext)
    hparams = context.get_hparams()
    assert 2 <= hparams["units"] <= 5 and hparams["activation"] in ("relu", "tanh")
    assert context.get_global_batch_size() == 4 and context.get_per_slot_batch_size() == 4
    assert context.get_trial_seed() == 3 and context.distributed.size == 1
    assert det.keras.TFKerasTrialContext.from_config(CONFIG).get_hparams() == hparams
    trial = _one_var_trial(det)(context)
    assert context.env.container_gpus == [] and trial.units == hparams["units"]
    model = trial.build_model()
    x, y = trial.build_training_data_loader()
    model.fit(x, y, batch_size=context.get_per_slot_batch_size(), epochs=1, verbose=0)
    assert np.isfinite(model.evaluate(*trial.build_validation_data_loader(), verbose=0))


def test_tfkeras_context_env_fields(det: ModuleType) -> None:
    from trialkit.core import DummyDistributedContext

    info = det.ClusterInfo(
        master_url="http://127.0.0.1:8080", cluster_id="c1", agent_id="a1", slot_ids=[0],
        task_id="t", allocation_id="alloc", session_token="",
        trial=det.TrialInfo(trial_id=9, experiment_id=4, trial_seed=1, hparams={},
                            config={}, steps_completed=0, trial_run_id=1),
    )  # fmt: skip

    class Core:
        distributed = DummyDistributedContext()

    core = Core()
    core.info = info  # type: ignore[attr-defined]
    context = det.keras.TFKerasTrialContext(
        core, hparams={"global_batch_size": 2}, exp_conf={"debug": True}, trial_seed=1
    )
    env = context.env
    assert isinstance(env, det.EnvContext)
    assert (env.det_trial_id, env.det_experiment_id, env.trial_seed) == ("9", "4", 1)
    assert env.experiment_config == {"debug": True} and env.debug is True
    assert env.hparams == {"global_batch_size": 2} and env.on_cluster is True
    env.det_trial_id = "10"  # settable, like any field of Determined's EnvContext
    assert context.env.det_trial_id == "10"
