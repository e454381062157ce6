"""``det.keras.callbacks`` (Determined 0.37's TFKerasTrial callbacks) on the shared loop: the
workload hooks at each reporting period, ``on_test_end`` with the ``val_`` metrics, the
checkpoint hooks, TensorBoard event files in the trial's TensorBoard directory, and callback
state saved in the checkpoint and restored on resume (after ``on_train_begin``, which resets
Keras's own callbacks), and the order in which every hook runs, pinned against the harness
writing its trial state. The model code (det_callbacks_def.py) imports ``determined``."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("tensorflow", reason="det.keras.callbacks needs tensorflow (tox -e tensorflow)")

from tests.integration.conftest import Master  # noqa: E402
from trialkit import core  # noqa: E402
from trialkit._alias import install  # noqa: E402
from trialkit.harness import TRIAL_STATE, Batch, LoopSettings, Target, TrainLoop  # noqa: E402
from trialkit.keras import TFKerasTrialContext  # noqa: E402
from trialkit.keras._callbacks import set_tensorboard_dir  # noqa: E402
from trialkit.keras._run import seed_all  # noqa: E402
from trialkit.keras._strategy import KerasStrategy  # noqa: E402
from trialkit.keras.callbacks import Callback  # noqa: E402

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
    make_trial: Callable[[TFKerasTrialContext], Any],
    batches: int,
    checkpoint: str | None = None,
    *,
    hparams: dict[str, Any] = HPARAMS,
    validation_period: int = 2,
    checkpoint_period: int = 100,
) -> tuple[Any, TrainLoop, Path]:
    """What the harness does for one trial run (trial id 5), to ``batches`` batches: report
    every 2 batches, validate and checkpoint at the periods given and at the end."""
    seed_all(5)
    with core.init() as core_context:
        set_tensorboard_dir(core_context.train.get_tensorboard_path())
        context = TFKerasTrialContext(core_context, hparams=hparams, exp_conf={}, trial_seed=5)
        trial = make_trial(context)
        strategy = KerasStrategy(trial, context)
        settings = LoopSettings(
            validation_period=Batch(validation_period),
            checkpoint_period=Batch(checkpoint_period),
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
    trial, loop, tb = _train(model_def.CallbacksTrial, 6)
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

    resumed, _, tb = _train(model_def.CallbacksTrial, 10, checkpoint=uuid)
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


class OrderRecorder(Callback):  # type: ignore[misc]
    """Records each hook as it runs; a checkpoint hook also says whether the trial state
    file is in the checkpoint directory yet."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    @staticmethod
    def _state_written(checkpoint_dir: str) -> str:
        return "state" if (Path(checkpoint_dir) / TRIAL_STATE).exists() else "no state"

    def on_train_begin(self, logs: Any = None) -> None:
        self.events.append("train_begin")

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self.events.append(f"epoch_begin {epoch}")

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self.events.append(f"batch_begin {batch}")

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.events.append(f"batch_end {batch} {sorted(logs or {})}")

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.events.append(f"epoch_end {epoch} {sorted(logs or {})}")

    def on_test_end(self, logs: Any = None) -> None:
        self.events.append(f"test_end {sorted(logs or {})}")

    def on_train_end(self, logs: Any = None) -> None:
        self.events.append(f"train_end {sorted(logs or {})}")

    def on_train_workload_begin(
        self, total_batches_trained: int, batches_requested: int | None, logs: dict[str, Any]
    ) -> None:
        self.events.append(f"workload_begin {total_batches_trained} {batches_requested}")

    def on_train_workload_end(self, total_batches_trained: int, logs: dict[str, Any]) -> None:
        self.events.append(f"workload_end {total_batches_trained} {sorted(logs)}")

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        self.events.append(f"checkpoint_end {self._state_written(checkpoint_dir)}")

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        self.events.append(f"checkpoint_write_end {self._state_written(checkpoint_dir)}")

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        self.events.append("checkpoint_upload_end")

    def get_state(self) -> Any:
        self.events.append("get_state")
        return len(self.events)

    def load_state(self, state: Any) -> None:
        self.events.append(f"load_state {state}")


TRAIN = "['loss']"
WORKLOAD = TRAIN  # the loop's averages of the workload's batches
VAL = "['val_loss']"
EPOCH = "['loss', 'val_loss']"  # the latest workload's and validation's logs


def _order_trial(model_def: Any) -> Callable[[TFKerasTrialContext], Any]:
    """The callbacks trial with an ``OrderRecorder`` as its one Keras callback."""

    class OrderTrial(model_def.CallbacksTrial):  # type: ignore[misc,name-defined]
        def __init__(self, context: TFKerasTrialContext) -> None:
            super().__init__(context)
            self.order = OrderRecorder()

        def keras_callbacks(self) -> list[Any]:
            return [self.order]

    return OrderTrial


def _train_in_order(
    model_def: Any, batches: int, checkpoint: str | None = None
) -> tuple[list[str], str | None]:
    """The hooks an ``OrderRecorder`` saw in a run of 32 rows at batch size 8 (4 batches an
    epoch), validated every 3 batches and checkpointed every 4; the run's last checkpoint."""
    hparams = {"global_batch_size": 8, "tensorboard": False}
    trial, loop, _ = _train(
        _order_trial(model_def), batches, checkpoint, hparams=hparams, validation_period=3,
        checkpoint_period=4,
    )  # fmt: skip
    return trial.order.events, loop.last_checkpoint


def test_keras_hooks_run_in_order_around_the_trial_state_write(
    trialkit_home: Path, model_def: Any
) -> None:
    """A run to 6 batches, then one resumed from its checkpoint to 8."""
    events, uuid = _train_in_order(model_def, 6)
    assert events == [
        "train_begin",
        "epoch_begin 0",
        "workload_begin 0 2",
        "batch_begin 0",
        f"batch_end 0 {TRAIN}",
        "batch_begin 1",
        f"batch_end 1 {TRAIN}",
        f"workload_end 2 {WORKLOAD}",
        "workload_begin 2 2",
        "batch_begin 2",
        f"batch_end 2 {TRAIN}",
        f"workload_end 3 {WORKLOAD}",
        f"test_end {VAL}",
        "workload_begin 3 1",
        "batch_begin 3",
        f"batch_end 3 {TRAIN}",
        f"epoch_end 0 {EPOCH}",
        f"workload_end 4 {WORKLOAD}",
        "get_state",
        "checkpoint_end no state",
        "checkpoint_write_end state",
        "checkpoint_upload_end",
        "epoch_begin 1",
        "workload_begin 4 2",
        "batch_begin 0",
        f"batch_end 0 {TRAIN}",
        "batch_begin 1",
        f"batch_end 1 {TRAIN}",
        f"workload_end 6 {WORKLOAD}",
        f"test_end {VAL}",
        "get_state",
        "checkpoint_end no state",
        "checkpoint_write_end state",
        "checkpoint_upload_end",
        f"train_end {EPOCH}",
    ]

    resumed, _ = _train_in_order(model_def, 8, uuid)
    assert resumed == [
        "train_begin",
        "load_state 31",  # after Keras's on_train_begin, which resets Keras's callbacks
        "workload_begin 6 2",
        "batch_begin 2",
        f"batch_end 2 {TRAIN}",
        "batch_begin 3",
        f"batch_end 3 {TRAIN}",
        "epoch_end 1 []",  # the resumed run has no workload or validation logs yet
        f"workload_end 8 {WORKLOAD}",
        "get_state",  # the checkpoint period ends at 8; the final validation comes after it
        "checkpoint_end no state",
        "checkpoint_write_end state",
        "checkpoint_upload_end",
        f"test_end {VAL}",
        f"train_end {EPOCH}",
    ]
