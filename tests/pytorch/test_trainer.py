"""Trainer.fit locally: the Trial contract, metrics, reducers, callbacks, checkpoints."""

from __future__ import annotations

import json
import pickle
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from tests.local_runs import ingested_store  # noqa: E402
from trialkit import pytorch  # noqa: E402
from trialkit.storage import MANIFEST_NAME  # noqa: E402

from .trials import FEATURES, RegressionTrial, dataset  # noqa: E402

HP = {"global_batch_size": 8, "dropout": 0.0}


def _fit(
    trial_cls: type, hparams: dict[str, Any] | None = None, **fit: Any
) -> tuple[Any, pytorch.Trainer]:
    with pytorch.init(hparams=dict(hparams or HP), seed=0) as ctx:
        trial = trial_cls(ctx)
        trainer = pytorch.Trainer(trial, ctx)
        fit.setdefault("max_length", pytorch.Batch(6))
        fit.setdefault("checkpoint_policy", "none")
        trainer.fit(**fit)
    return trial, trainer


def _metrics(home: Path, group: str) -> list[Any]:
    store = ingested_store(home)
    try:
        [trial] = store.list_trials()
        return store.list_metrics(trial.id, group)
    finally:
        store.close()


class NoModel(RegressionTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context


class NoOptimizer(RegressionTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        self.model = context.wrap_model(nn.Linear(FEATURES, 1))


class BothEvaluate(RegressionTrial):
    def evaluate_full_dataset(self, data_loader: Any) -> dict[str, Any]:
        return {}


class NeitherEvaluate(RegressionTrial):
    evaluate_batch = pytorch.PyTorchTrial.evaluate_batch  # type: ignore[assignment]


@pytest.mark.parametrize(
    ("cls", "line"),
    [
        (NoModel, "NoModel.__init__ did not call context.wrap_model(...): wrap at least one model"),
        (NoOptimizer, "NoOptimizer.__init__ did not call context.wrap_optimizer(...)"),
        (
            BothEvaluate,
            "BothEvaluate defines both evaluate_batch and evaluate_full_dataset: keep exactly one",
        ),
        (
            NeitherEvaluate,
            "NeitherEvaluate defines neither evaluate_batch nor evaluate_full_dataset",
        ),
    ],
)
def test_bad_trials_fail_with_one_clear_line(cls: type, line: str) -> None:
    with pytest.raises(ValueError) as info:
        _fit(cls)
    assert str(info.value).startswith(line) and "\n" not in str(info.value)


def test_torch_dataloader_needs_the_opt_out() -> None:
    class TorchLoader(RegressionTrial):
        def build_training_data_loader(self) -> Any:
            return torch.utils.data.DataLoader(dataset(0), batch_size=8)

    with pytest.raises(TypeError, match="disable_dataset_reproducibility_checks"):
        _fit(TorchLoader)

    class Allowed(TorchLoader):
        def __init__(self, context: Any) -> None:
            super().__init__(context)
            context.experimental.disable_dataset_reproducibility_checks()

    _, trainer = _fit(Allowed, max_length=pytorch.Batch(8))
    assert trainer.loop is not None and trainer.loop.progress.batches_trained == 8


def test_metrics_reported_per_period_with_batches_records_epochs(trialkit_home: Path) -> None:
    class TensorLoss(RegressionTrial):
        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Any:
            out = super().train_batch(batch, epoch_idx, batch_idx)
            return out["loss"]  # a bare tensor becomes {"loss": t}

    _, trainer = _fit(TensorLoss, max_length=pytorch.Epoch(2), reporting_period=pytorch.Batch(4),
                      validation_period=pytorch.Epoch(1))  # fmt: skip
    training = _metrics(trialkit_home, "training")
    assert [m.steps_completed for m in training] == [4, 6, 8, 12]  # periods, epoch end (val), end
    assert training[0].values["batches"] == 4 and training[0].values["records"] == 32
    assert set(training[0].values) == {"loss", "batches", "epochs", "records"}
    validation = _metrics(trialkit_home, "validation")
    assert [(m.steps_completed, m.values["epochs"]) for m in validation] == [(6, 1), (12, 2)]


def test_training_metric_is_the_mean_of_the_period(trialkit_home: Path) -> None:
    class Constant(RegressionTrial):
        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            super().train_batch(batch, epoch_idx, batch_idx)
            return {"i": float(batch_idx)}

    _fit(Constant, max_length=pytorch.Batch(6), reporting_period=pytorch.Batch(3))
    assert [m.values["i"] for m in _metrics(trialkit_home, "training")] == [1.0, 4.0]


def test_a_period_of_losses_is_read_from_the_device_at_once_not_batch_by_batch(
    trialkit_home: Path,
) -> None:
    """On a GPU each ``.item()`` waits for the device: training reads no metric per batch."""
    from tests.pytorch.test_host_metrics import _CountOps

    class NoValidation(RegressionTrial):
        def evaluate_batch(self, batch: Any) -> dict[str, Any]:
            return {"val_loss": 0.0}

    with _CountOps() as ops:  # 12 batches of 2 records: one epoch
        _fit(NoValidation, {**HP, "global_batch_size": 2}, max_length=pytorch.Batch(12),
             reporting_period=pytorch.Batch(6), validation_period=pytorch.Batch(100))  # fmt: skip
    # .item() runs _local_scalar_dense: for the seeds of the shuffle sampler and of the torch
    # loaders (training, then the validation at the end), never for a metric (was: 3 + 12)
    assert ops.counts.get("_local_scalar_dense", 0) == 3, ops.counts
    losses = [m.values["loss"] for m in _metrics(trialkit_home, "training")]
    assert len(losses) == 2 and all(isinstance(v, float) and v > 0 for v in losses)


def test_evaluate_full_dataset_and_reducers(trialkit_home: Path) -> None:
    class Full(RegressionTrial):
        evaluate_batch = pytorch.PyTorchTrial.evaluate_batch  # type: ignore[assignment]

        def __init__(self, context: Any) -> None:
            super().__init__(context)
            self.seen = context.wrap_reducer(
                lambda xs: float(sum(xs)), name="x_sum", for_validation=False
            )

        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            self.seen.update(len(batch[0]))
            return super().train_batch(batch, epoch_idx, batch_idx)

        def evaluate_full_dataset(self, data_loader: Any) -> dict[str, Any]:
            n = sum(len(b[0]) for b in data_loader)
            return {"records_seen": n}

    _fit(Full, max_length=pytorch.Batch(4), reporting_period=pytorch.Batch(2))
    assert [m.values["x_sum"] for m in _metrics(trialkit_home, "training")] == [16.0, 16.0]
    [val] = _metrics(trialkit_home, "validation")
    assert val.values["records_seen"] == 20


def test_evaluation_reducer_per_metric(trialkit_home: Path) -> None:
    class Reduced(RegressionTrial):
        def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
            return {"n": len(batch[0]), "idx": batch_idx}

        def evaluation_reducer(self) -> dict[str, pytorch.Reducer]:
            return {"n": pytorch.Reducer.SUM, "idx": pytorch.Reducer.MAX}

    _fit(Reduced, max_length=pytorch.Batch(2))
    [val] = _metrics(trialkit_home, "validation")
    assert (val.values["n"], val.values["idx"]) == (20, 2)  # 8 + 8 + 4 records, 3 batches


def test_callback_hooks_and_checkpoint_layout(trialkit_home: Path) -> None:
    trial, trainer = _fit(RegressionTrial, max_length=pytorch.Epoch(2), validation_period=pytorch.Epoch(1),
                          checkpoint_policy="all")  # fmt: skip
    calls = trial.callback.calls
    assert (
        calls["on_trial_startup"] == calls["on_trial_shutdown"] == calls["on_training_start"] == 1
    )
    assert calls["on_training_epoch_start"] == calls["on_training_epoch_end"] == 2
    assert calls["on_validation_end"] == 2 and calls["on_validation_epoch_end"] == 2
    assert (
        calls["on_checkpoint_save_start"]
        == calls["on_checkpoint_write_end"]
        == calls["on_checkpoint_upload_end"]
        == 2
    )
    assert trainer.loop is not None
    path = trialkit_home / "checkpoints" / str(trainer.loop.last_checkpoint)
    names = {p.name for p in path.iterdir()}
    assert names - {MANIFEST_NAME} == {
        "state_dict.pth", "trial_state.pkl", "load_data.json", "metadata.json", "code"
    }  # fmt: skip
    state = torch.load(path / "state_dict.pth", weights_only=False)
    # Determined's keys, plus trialkit's shuffle seeds of the recent passes (Determined's
    # loader ignores keys it does not know).
    assert sorted(state) == ["callbacks", "lr_schedulers_state_dict", "models_state_dict",
                             "optimizers_state_dict", "rng_state", "trialkit_shuffle"]  # fmt: skip
    assert state["trialkit_shuffle"]["skip"] == 12
    assert state["callbacks"] == {"recorder": {"validations": 2}}
    progress = pickle.loads((path / "trial_state.pkl").read_bytes())
    assert {k: progress[k] for k in ("batches_trained", "epochs_trained", "last_ckpt", "last_val")} == {
        "batches_trained": 12, "epochs_trained": 2, "last_ckpt": 12, "last_val": 12}  # fmt: skip
    load_data = json.loads((path / "load_data.json").read_text())
    assert load_data["trial_cls_spec"] == "tests.pytorch.trials:RegressionTrial" or load_data[
        "trial_cls_spec"
    ].endswith("trials:RegressionTrial")
    assert load_data["is_trainer"] is True
    assert load_data["hparams"] == HP and load_data["experiment_config"] is None  # no exp_conf
    assert json.loads((path / "metadata.json").read_text())["steps_completed"] == 12
    assert (path / "code" / "trials.py").is_file()
    restored = pytorch.load_trial_from_checkpoint_path(path)
    for a, b in zip(restored.model.parameters(), trial.model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_local_best_policy_becomes_all_with_a_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, trainer = _fit(
            RegressionTrial, checkpoint_policy="best", validation_period=pytorch.Batch(3)
        )
    assert any("means 'all'" in str(w.message) for w in caught)


def test_fit_argument_errors() -> None:
    with pytest.raises(TypeError, match="Batch\\(int\\) or Epoch\\(int\\)"):
        _fit(RegressionTrial, max_length=pytorch.Batch([1, 2]))
    with pytest.raises(ValueError, match="checkpoint_policy"):
        _fit(RegressionTrial, checkpoint_policy="sometimes")
    with pytest.raises(ValueError, match="max_length"):
        _fit(RegressionTrial, max_length=None)


def test_stop_requested_checkpoints_and_returns_at_that_batch() -> None:
    with pytorch.init(hparams=dict(HP), seed=0) as ctx:
        trial = RegressionTrial(ctx, stop_at=3)
        trainer = pytorch.Trainer(trial, ctx)
        trainer.fit(max_length=pytorch.Batch(10), checkpoint_policy="none")
    assert trainer.loop is not None
    assert trainer.loop.progress.batches_trained == 3 and trainer.loop.progress.last_ckpt == 3
    assert trainer.loop.progress.last_val == 0  # stopping does not validate


def test_test_mode_runs_one_batch_and_one_validation_batch(trialkit_home: Path) -> None:
    _, trainer = _fit(RegressionTrial, max_length=pytorch.Batch(10), test_mode=True)
    assert trainer.loop is not None and trainer.loop.progress.batches_trained == 1
    [val] = _metrics(trialkit_home, "validation")
    assert val.steps_completed == 1


def test_warm_start_from_another_trial_keeps_weights_not_progress() -> None:
    _, first = _fit(RegressionTrial, max_length=pytorch.Batch(4))
    assert first.loop is not None
    with pytorch.init(hparams=dict(HP), seed=0) as ctx:
        trial = RegressionTrial(ctx)
        trainer = pytorch.Trainer(trial, ctx)
        loop_cls = pytorch._trainer.TrainLoop  # type: ignore[attr-defined]
        orig = loop_cls.__init__

        def other_trial(self: Any, core: Any, strategy: Any, settings: Any) -> None:
            settings.trial_id = 99
            orig(self, core, strategy, settings)

        loop_cls.__init__ = other_trial
        try:
            trainer.fit(max_length=pytorch.Batch(2), latest_checkpoint=first.loop.last_checkpoint,
                        checkpoint_policy="none")  # fmt: skip
        finally:
            loop_cls.__init__ = orig
    assert trainer.loop is not None and trainer.loop.progress.batches_trained == 2


def test_set_profiler_wraps_training_and_writes_traces(trialkit_home: Path) -> None:
    class Profiled(RegressionTrial):
        def __init__(self, context: Any) -> None:
            super().__init__(context)
            context.set_profiler(
                activities=[torch.profiler.ProfilerActivity.CPU],
                schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
            )

    with pytorch.init(hparams=dict(HP), seed=0) as ctx:
        trial = Profiled(ctx)
        pytorch.Trainer(trial, ctx).fit(max_length=pytorch.Batch(6), checkpoint_policy="none")
        traces = list(Path(ctx.get_tensorboard_path()).rglob("*.pt.trace.json*"))
    assert traces, "no profiler trace written"


def test_on_training_epoch_callbacks_see_epoch_indices() -> None:
    seen: list[tuple[str, int]] = []

    class Epochs(pytorch.PyTorchCallback):
        def on_training_epoch_start(self, epoch_idx: int) -> None:
            seen.append(("start", epoch_idx))

        def on_training_epoch_end(self, epoch_idx: int) -> None:
            seen.append(("end", epoch_idx))

    class WithEpochs(RegressionTrial):
        def build_callbacks(self) -> dict[str, pytorch.PyTorchCallback]:
            return {"epochs": Epochs()}

        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            assert self.context.current_train_epoch() == epoch_idx == batch_idx // 6
            assert self.context.is_epoch_start() == (batch_idx % 6 == 0)
            return super().train_batch(batch, epoch_idx, batch_idx)

    _fit(WithEpochs, max_length=pytorch.Epoch(2))
    assert seen == [("start", 0), ("end", 0), ("start", 1), ("end", 1)]


@pytest.mark.parametrize(
    ("unit", "n", "expected"),
    [
        ("batches", 7, pytorch.Batch(7)),
        ("records", 100, pytorch.Batch(3)),  # 100 // 32
        ("epochs", 2, pytorch.Epoch(2)),  # passes over the loader; records_per_epoch unused
    ],
)
def test_searcher_lengths_convert_as_determined_pytorchtrial(
    unit: str, n: int, expected: Any
) -> None:
    from trialkit.harness import SearcherUnits

    assert SearcherUnits(unit, 32).length(n) == expected
    with pytest.raises(ValueError, match="global_batch_size"):
        SearcherUnits("records", None)
    with pytest.raises(ValueError, match="batches, records or epochs"):
        SearcherUnits("seconds", 32)


def test_load_trial_from_code_dir_of_a_dotted_module(tmp_path: Path) -> None:
    from trialkit.contract._trial_code import import_trial_class as _import_trial

    code = tmp_path / "code"
    code.mkdir()
    (code / "zz_model_def_f4.py").write_text("class T:\n    pass\n")
    cls = _import_trial(code, "some.pkg.zz_model_def_f4:T")
    assert cls.__name__ == "T"
    with pytest.raises(ModuleNotFoundError):
        _import_trial(code, "some.pkg.missing:T")


def test_invalid_hp_checkpoints_and_ends_the_run_as_an_early_exit(trialkit_home: Path) -> None:
    from trialkit import InvalidHP

    class Diverges(RegressionTrial):
        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            if batch_idx == 3:
                raise InvalidHP("loss diverged")
            return super().train_batch(batch, epoch_idx, batch_idx)

    holder: dict[str, Any] = {}
    with pytorch.init(hparams=dict(HP), seed=0) as ctx:  # the core context suppresses InvalidHP
        holder["trainer"] = pytorch.Trainer(Diverges(ctx), ctx)
        holder["trainer"].fit(max_length=pytorch.Batch(10), checkpoint_policy="none")
    loop = holder["trainer"].loop
    assert loop.progress.batches_trained == 3 and loop.last_checkpoint is not None
    store = ingested_store(trialkit_home)
    try:
        [trial] = store.list_trials()
        assert trial.searcher.early_exit == "INVALID_HP"
    finally:
        store.close()


def test_legacy_zero_argument_epoch_hooks_still_run_with_a_warning() -> None:
    hits: list[str] = []

    class Legacy(pytorch.PyTorchCallback):
        def on_training_epoch_start(self) -> None:  # type: ignore[override]
            hits.append("start")

        def on_checkpoint_end(self, checkpoint_dir: str) -> None:
            hits.append("ckpt_end")

    class WithLegacy(RegressionTrial):
        def build_callbacks(self) -> dict[str, pytorch.PyTorchCallback]:
            return {"legacy": Legacy()}

    with pytest.warns(FutureWarning) as record:
        _fit(WithLegacy, max_length=pytorch.Epoch(2))
    messages = " ".join(str(w.message) for w in record)
    assert "takes no epoch_idx" in messages and "on_checkpoint_end" in messages
    assert hits == ["start", "start", "ckpt_end"]


def test_the_loop_and_its_strategy_fire_hooks_through_one_dispatcher() -> None:
    """The loop owns the trial's one ``Hooks``; the strategy's validation and checkpoint hooks
    go through it too (two dispatchers before)."""
    _, trainer = _fit(RegressionTrial, validation_period=pytorch.Batch(3))
    loop = trainer.loop
    assert loop is not None and loop.strategy.hooks is loop.hooks  # type: ignore[attr-defined]


def test_checkpoint_state_mismatches_are_errors_and_legacy_keys_load(tmp_path: Path) -> None:
    from trialkit.harness import Hooks
    from trialkit.pytorch._strategy import TorchStrategy

    with pytorch.init(hparams=dict(HP), seed=0) as ctx:
        trial = RegressionTrial(ctx)
        strategy = TorchStrategy(trial, ctx)
        strategy.use_hooks(Hooks(strategy.callbacks))
        good = {
            "model_state_dict": {"module." + k: v for k, v in trial.model.state_dict().items()},
            "optimizer_state_dict": trial.opt.state_dict(),
            "rng_state": {},
        }
        torch.save(good, tmp_path / "state_dict.pth")
        assert (
            strategy.load(tmp_path) == {}
        )  # DDP-prefixed legacy weights load into the plain model
        torch.save(
            {**good, "models_state_dict": [good["model_state_dict"]]}, tmp_path / "state_dict.pth"
        )
        with pytest.raises(RuntimeError, match="both 'models_state_dict' and the legacy"):
            strategy.load(tmp_path)
        torch.save(
            {"models_state_dict": [], "optimizers_state_dict": []}, tmp_path / "state_dict.pth"
        )
        with pytest.raises(RuntimeError, match="0 model state"):
            strategy.load(tmp_path)
