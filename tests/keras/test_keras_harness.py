"""TFKerasTrial under the master (Keras 3 on TensorFlow, one worker): the iris example as
``entrypoint: model_def:IrisTrial``, checkpoints in Keras 3's weights format, and a pause
mid-training that resumes to the same final weights as an uninterrupted run."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip(
    "tensorflow", reason="the Keras harness tests need tensorflow (tox -e tensorflow)"
)
pytest.importorskip("keras", reason="the Keras harness tests need Keras 3 (tox -e tensorflow)")

from tests.integration.conftest import EXAMPLES, Master  # noqa: E402

pytestmark = pytest.mark.integration
IRIS = EXAMPLES / "iris_tf_keras"
HERE = Path(__file__).resolve().parent


def _iris_config(**changes: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = yaml.safe_load((IRIS / "const.yaml").read_text())
    cfg.update(changes)
    return cfg


def _run(master: Master, cfg: dict[str, Any], model_dir: Path, timeout: float = 240) -> Any:
    exp = master.create(cfg, model_dir)
    return master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=timeout)


def _metrics(master: Master, trial_id: int, group: str) -> list[dict[str, Any]]:
    got = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": group}
    )
    return list(got["metrics"])


def _weights(master: Master, uuid: str, out: Path) -> dict[str, np.ndarray]:
    """Every array in a checkpoint's Keras weights file and optimizer state."""
    import h5py

    master.cli("checkpoint", "download", uuid, "--output-dir", str(out))
    arrays: dict[str, np.ndarray] = {}
    with h5py.File(out / "determined-keras-model.weights.h5", "r") as f:
        f.visititems(
            lambda name, obj: (
                arrays.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None
            )
        )
    with np.load(out / "determined-keras-optimizer-state.npz") as opt:
        arrays.update({f"optimizer/{k}": opt[k] for k in opt.files})
    return arrays


def test_iris_const_trains_for_epochs_validates_and_checkpoints(
    master: Master, tmp_path: Path
) -> None:
    model_dir = Path(shutil.copytree(IRIS, tmp_path / "iris"))
    cfg = _iris_config(
        perform_initial_validation=True, scheduling_unit=2, reproducibility={"experiment_seed": 1}
    )
    desc = _run(master, cfg, model_dir)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    # 120 training rows / global_batch_size 30 = 4 batches an epoch; 25 epochs = 100 batches,
    # validated at step 0 and every 5 epochs (20 batches).
    vals = _metrics(master, trial["id"], "validation")
    assert [m["steps_completed"] for m in vals] == [0, 20, 40, 60, 80, 100]
    last = vals[-1]["values"]
    assert last["epochs"] == 25 and last["records"] == 100 * 30
    assert set(last) >= {"val_loss", "val_categorical_accuracy"}
    # the untrained model may already place one class in three (real iris rows): compare with it
    first_acc = vals[0]["values"]["val_categorical_accuracy"]
    assert last["val_categorical_accuracy"] >= max(0.8, first_acc + 0.1), vals
    train = _metrics(master, trial["id"], "training")
    assert [m["steps_completed"] for m in train] == list(range(2, 101, 2))
    assert train[-1]["values"]["loss"] < train[0]["values"]["loss"]
    ckpts = sorted(desc["checkpoints"], key=lambda c: c["steps_completed"])
    assert ckpts[-1]["steps_completed"] == 100
    files = set(ckpts[-1]["resources"])
    for name in (
        "determined-keras-model.weights.h5",
        "determined-keras-optimizer-state.npz",
        "rng_state.pkl",
        "trial_state.pkl",
        "load_data.json",
        "metadata.json",
    ):
        assert name in files, files


def test_iris_adaptive_asha_search_runs_to_completion(master: Master, tmp_path: Path) -> None:
    model_dir = Path(shutil.copytree(IRIS, tmp_path / "iris"))
    cfg = yaml.safe_load((IRIS / "adaptive.yaml").read_text())
    cfg["searcher"].update(max_trials=4, max_length={"epochs": 8})
    desc = _run(master, cfg, model_dir, timeout=300)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    trials = desc["trials"]
    assert len(trials) == 4 and all(t["state"] == "COMPLETED" for t in trials)
    lengths = sorted(t["latest_validation"]["steps_completed"] for t in trials)
    assert lengths[-1] == 8 * 4 and lengths[0] < 8 * 4  # promoted vs. stopped at a lower rung
    for t in trials:
        assert 0 <= t["latest_validation"]["values"]["val_categorical_accuracy"] <= 1


def test_0_38_time_metric_in_records_trains_to_max_time(master: Master, tmp_path: Path) -> None:
    model_dir = Path(shutil.copytree(IRIS, tmp_path / "iris"))
    searcher = {"name": "adaptive_asha", "metric": "val_loss", "time_metric": "records",
                "max_time": 600, "max_trials": 2, "max_concurrent_trials": 2, "max_rungs": 2}  # fmt: skip
    cfg = _iris_config(searcher=searcher, min_validation_period={"batches": 10})
    desc = _run(master, cfg, model_dir, timeout=300)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    for t in desc["trials"]:
        values = t["latest_validation"]["values"]
        assert values["records"] == 30 * t["latest_validation"]["steps_completed"]
        assert values["batches"] in (5, 10, 20)  # rungs at 150 and 600 records, 30 a batch
    assert max(t["latest_validation"]["values"]["records"] for t in desc["trials"]) == 600


def test_invalid_hp_from_build_model_ends_the_trial_as_an_early_exit(
    master: Master, tmp_path: Path
) -> None:
    d = tmp_path / "invalid"
    d.mkdir()
    (d / "model_def.py").write_text(
        "import trialkit\n"
        "from trialkit import keras as tk\n"
        "class Invalid(tk.TFKerasTrial):\n"
        "    def build_model(self):\n"
        "        raise trialkit.InvalidHP('layer size too small')\n"
    )
    cfg = {
        "name": "invalid",
        "entrypoint": "model_def:Invalid",
        "hyperparameters": {"global_batch_size": 4},
        "searcher": {"name": "single", "metric": "val_loss", "max_length": {"batches": 2}},
        "max_restarts": 0,
    }
    desc = _run(master, cfg, d, timeout=120)
    [trial] = desc["trials"]
    assert trial["state"] == "COMPLETED" and trial["early_exit"] == "INVALID_HP", trial


def _resumable_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    shutil.copy(HERE / "resumable_def.py", d / "model_def.py")
    shutil.copy(IRIS / "iris.csv", d / "iris.csv")
    return d


def _resumable_config(data: str) -> dict[str, Any]:
    return {
        "name": f"keras-resume-{data}",
        "entrypoint": "model_def:ResumableTrial",
        "hyperparameters": {"global_batch_size": 10, "batch_sleep": 0.05, "data": data},
        "searcher": {
            "name": "single",
            "metric": "val_loss",
            "max_length": {"batches": 60},
        },
        "min_validation_period": {"batches": 25},
        "scheduling_unit": 5,
        "reproducibility": {"experiment_seed": 7},
        "max_restarts": 0,
    }


@pytest.mark.parametrize("data", ["arrays", "dataset", "pydataset"])
def test_pause_mid_epoch_then_activate_ends_on_the_uninterrupted_weights(
    master: Master, tmp_path: Path, data: str
) -> None:
    cfg = _resumable_config(data)
    straight = _run(master, cfg, _resumable_dir(tmp_path, "straight"))
    assert straight["experiment"]["state"] == "COMPLETED", straight

    exp = master.create(cfg, _resumable_dir(tmp_path, "paused"))

    def trained() -> int:
        trials = master.describe(exp)["trials"]
        if not trials:
            return 0
        steps = [m["steps_completed"] for m in _metrics(master, trials[0]["id"], "training")]
        return max(steps, default=0)

    master.wait_for(lambda: trained() >= 10, timeout=180, what="10 batches trained")
    master.cli("experiment", "pause", str(exp))
    master.wait_for(
        lambda: master.describe(exp)["trials"][0]["state"] == "PAUSED",
        timeout=120,
        what="trial PAUSED",
    )
    paused = master.describe(exp)
    paused_at = max(c["steps_completed"] for c in paused["checkpoints"])
    assert 10 <= paused_at < 60
    master.cli("experiment", "activate", str(exp))
    resumed = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=240)
    assert resumed["experiment"]["state"] == "COMPLETED", resumed
    assert resumed["trials"][0]["run_id"] == 2

    def final(desc: dict[str, Any], out: Path) -> dict[str, np.ndarray]:
        [ckpt] = [c for c in desc["checkpoints"] if c["steps_completed"] == 60]
        return _weights(master, ckpt["uuid"], out)

    a, b = final(straight, tmp_path / "a"), final(resumed, tmp_path / "b")
    assert a.keys() == b.keys() and len(a) >= 4
    for key in a:  # bitwise on CPU with op determinism
        assert np.array_equal(a[key], b[key]), key
    # The training metrics after the pause continue where the first run left off.
    [t] = resumed["trials"]
    steps = [m["steps_completed"] for m in _metrics(master, t["id"], "training")]
    assert steps == sorted(set(steps)) and steps[-1] == 60
    # Determined's TFKerasTrial callback hooks ran: after each report and each checkpoint.
    logs = master.cli("trial", "logs", str(t["id"])).stdout
    assert "workload end at 5: loss=" in logs and "workload end at 60: loss=" in logs, logs
    assert "checkpoint end: weights written=True" in logs, logs


def test_a_keras_trial_without_wrap_model_fails_with_one_line(
    master: Master, tmp_path: Path
) -> None:
    logs = _failed_trial_logs(
        master,
        tmp_path,
        "model_def:Bad",
        "import keras\n"
        "from trialkit import keras as tk\n"
        "class Bad(tk.TFKerasTrial):\n"
        "    def build_model(self):\n"
        "        m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])\n"
        "        m.compile(optimizer='sgd', loss='mse')\n"
        "        return m\n",
    )
    # The contract error is one line, not a traceback.
    assert "error: Bad.build_model() did not call context.wrap_model(model)" in logs, logs
    assert "Traceback" not in logs, logs


def test_a_determined_trial_in_tf1_graph_mode_is_refused_with_one_line(
    master: Master, tmp_path: Path
) -> None:
    """Determined 0.37 ran TFKerasTrial under ``tf.compat.v1.disable_v2_behavior()``; trialkit
    trains eagerly and says so in one line instead of failing inside ``train_on_batch``."""
    logs = _failed_trial_logs(
        master,
        tmp_path,
        "model_def:GraphTrial",
        "import tensorflow as tf\n"
        "from determined import keras\n"
        "tf.compat.v1.disable_v2_behavior()\n"
        "class GraphTrial(keras.TFKerasTrial):\n"
        "    def build_model(self):\n"
        "        m = self.context.wrap_model(tf.keras.Sequential(\n"
        "            [tf.keras.layers.Dense(1, input_shape=(2,))]))\n"
        "        m.compile(optimizer='sgd', loss='mse')\n"
        "        return m\n"
        "    def build_training_data_loader(self):\n"
        "        import numpy as np\n"
        "        return np.zeros((8, 2), 'float32'), np.zeros((8, 1), 'float32')\n"
        "    build_validation_data_loader = build_training_data_loader\n",
    )
    assert "error: GraphTrial: TensorFlow 1 graph mode" in logs, logs
    assert "Traceback" not in logs, logs


def _failed_trial_logs(master: Master, tmp_path: Path, entrypoint: str, model_def: str) -> str:
    """The trial log of a one-trial experiment of ``model_def`` that must end in ERROR."""
    d = tmp_path / "model"
    d.mkdir()
    (d / "model_def.py").write_text(model_def)
    cfg = {
        "name": entrypoint,
        "entrypoint": entrypoint,
        "hyperparameters": {"global_batch_size": 4},
        "searcher": {"name": "single", "metric": "val_loss", "max_length": {"batches": 2}},
        "max_restarts": 0,
    }
    desc = _run(master, cfg, d, timeout=120)
    assert desc["experiment"]["state"] == "ERROR"
    return str(master.cli("trial", "logs", str(desc["trials"][0]["id"])).stdout)
