"""``det.keras.callbacks`` (Determined 0.37's TFKerasTrial callbacks) on the shared loop: the
workload hooks at each reporting period, ``on_test_end`` with the ``val_`` metrics, the
checkpoint hooks, TensorBoard event files in the trial's TensorBoard directory, and callback
state saved in the checkpoint and restored on resume (after ``on_train_begin``, which resets
Keras's own callbacks). The model code (det_callbacks_def.py) imports ``determined``."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("tensorflow", reason="det.keras.callbacks needs tensorflow (tox -e tensorflow)")

from tests.integration.conftest import Master  # noqa: E402
from trialkit import core  # noqa: E402
from trialkit._alias import install  # noqa: E402
from trialkit.harness import Batch, LoopSettings, Target, TrainLoop  # noqa: E402
from trialkit.keras import TFKerasTrialContext  # noqa: E402
from trialkit.keras._callbacks import set_tensorboard_dir  # noqa: E402
from trialkit.keras._run import seed_all  # noqa: E402
from trialkit.keras._strategy import KerasStrategy  # noqa: E402

HERE = Path(__file__).resolve().parent
#: Keras's TensorBoard callback needs the tensorboard package (in the keras tox env).
HAS_TENSORBOARD = importlib.util.find_spec("tensorboard") is not None
HPARAMS = {"global_batch_size": 4, "tensorboard": HAS_TENSORBOARD}


@pytest.fixture
def model_def() -> Iterator[Any]:
    install()
    sys.path.insert(0, str(HERE))
    try:
        import det_callbacks_def

        yield det_callbacks_def
    finally:
        sys.path.remove(str(HERE))


def _train(
    model_def: Any, batches: int, checkpoint: str | None = None
) -> tuple[Any, TrainLoop, Path]:
    """What the harness does for one trial run (trial id 5), to ``batches`` batches."""
    seed_all(5)
    with core.init() as core_context:
        set_tensorboard_dir(core_context.train.get_tensorboard_path())
        context = TFKerasTrialContext(core_context, hparams=HPARAMS, exp_conf={}, trial_seed=5)
        trial = model_def.CallbacksTrial(context)
        strategy = KerasStrategy(trial, context)
        settings = LoopSettings(
            validation_period=Batch(2),
            checkpoint_period=Batch(100),
            reporting_period=Batch(2),
            checkpoint_policy="none",
            searcher_metric="val_loss",
            trial_id=5,
        )
        loop = TrainLoop(core_context, strategy, settings)
        strategy.keras_callback.scheduling_unit = 2
        loop.run([Target(Batch(batches))], checkpoint)
        tb = core_context.train.get_tensorboard_path()
    return trial, loop, tb


def _epoch_losses(tb: Path) -> list[int]:
    import tensorflow as tf

    steps = []
    for file in sorted((tb / "train").glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(file)):
            steps += [event.step for v in event.summary.value if v.tag == "epoch_loss"]
    return steps


def test_callbacks_run_at_workloads_and_keep_their_state_across_a_resume(
    trialkit_home: Path, model_def: Any
) -> None:
    import determined as det

    assert det.keras.callbacks.TensorBoard is model_def.det.keras.callbacks.TensorBoard
    trial, loop, tb = _train(model_def, 6)
    rec = trial.recorder
    assert rec.begins == [[0, 2], [2, 2], [4, 2]] and rec.ends == [2, 4, 6]
    # on_test_end once per validation, with Determined's val_ names
    assert rec.validations == [["val_loss"]] * 3
    assert trial.early.test_end_count == 3 and trial.plateau.test_end_count == 3
    if HAS_TENSORBOARD:
        assert _epoch_losses(tb) == [0, 1, 2]  # one TensorBoard epoch per workload
    [uuid] = rec.uploads
    assert uuid == loop.last_checkpoint
    with core.init() as ctx, ctx.checkpoint.restore_path(uuid) as path:
        assert (path / "recorder.json").read_text() == '{"ends": [2, 4, 6], "validations": 3}'

    resumed, _, tb = _train(model_def, 10, checkpoint=uuid)
    assert resumed.recorder.loaded == {"ends": [2, 4, 6], "validations": 3}
    assert resumed.recorder.ends == [2, 4, 6, 8, 10]
    assert resumed.recorder.begins == [[6, 2], [8, 2]]
    # Keras's on_train_begin reset them; the checkpoint's state came back after it
    assert resumed.early.test_end_count == 5 and resumed.plateau.test_end_count == 5
    assert resumed.early.best is not None and resumed.early.best <= trial.early.best
    if HAS_TENSORBOARD:
        assert resumed.tensorboard.workload_end_count == 5
        assert _epoch_losses(tb)[-2:] == [3, 4]


@pytest.mark.integration
def test_a_determined_model_def_with_det_keras_callbacks_runs_under_the_master(
    master: Master, tmp_path: Path
) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    shutil.copy(HERE / "det_callbacks_def.py", model_dir / "model_def.py")
    cfg = {
        "name": "det-keras-callbacks",
        "entrypoint": "model_def:CallbacksTrial",
        "hyperparameters": HPARAMS,
        "scheduling_unit": 2,
        "min_validation_period": {"batches": 2},
        "searcher": {"name": "single", "metric": "val_loss", "max_length": {"batches": 4}},
    }
    (model_dir / "const.yaml").write_text(yaml.safe_dump(cfg))
    exp = master.create(cfg, model_dir)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
    assert desc["experiment"]["state"] == "COMPLETED", master.cli("trial", "logs", "1").stdout
    [trial] = desc["trials"]
    if HAS_TENSORBOARD:
        events = list((master.home / "tensorboard").rglob("train/events.out.tfevents.*"))
        assert events, "no TensorBoard event files from det.keras.callbacks.TensorBoard"
    got = master.client.request("GET", f"/api/v1/experiments/{exp}/checkpoints")
    uuid = got["checkpoints"][-1]["uuid"]
    out = tmp_path / "ckpt"
    master.cli("checkpoint", "download", uuid, "--output-dir", str(out))
    assert (out / "recorder.json").read_text() == '{"ends": [2, 4], "validations": 2}'
