"""DeepSpeedTrial in-process on one CPU rank with real DeepSpeed engines: training, validation,
the checkpoint layout, exact resume after a stop at any batch (ZeRO 0-3, gradient
accumulation, two engines), global batch/epoch indices and the contract errors."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deepspeed")
import torch

from trialkit import deepspeed as tkds
from trialkit.harness import TrainLoop
from trialkit.storage import MANIFEST_NAME

from .ds_trials import (
    CustomSaveTrial,
    FullDatasetTrial,
    GANTrial,
    LinearTrial,
    ManualAccumulationTrial,
    NoDataTrial,
    PipelineTrial,
    gathered_weights,
)

LENGTH = 30


def _fit(
    trial_class: type[tkds.DeepSpeedTrial],
    hparams: dict[str, Any],
    latest: str | None = None,
    **fit: Any,
) -> tuple[tkds.DeepSpeedTrial, TrainLoop]:
    with tkds.init(hparams=copy.deepcopy(hparams), seed=7) as ctx:
        trial = trial_class(ctx)
        trainer = tkds.Trainer(trial, ctx)
        fit.setdefault("max_length", tkds.Batch(LENGTH))
        fit.setdefault("validation_period", tkds.Batch(10))
        fit.setdefault("checkpoint_policy", "none")
        trainer.fit(latest_checkpoint=latest, **fit)
        assert trainer.loop is not None
        return trial, trainer.loop


def _resumed_equals_uninterrupted(
    trial_class: type[tkds.DeepSpeedTrial], hparams: dict[str, Any], stop_at: int
) -> None:
    straight, _ = _fit(trial_class, hparams)
    stopped, loop = _fit(trial_class, {**hparams, "stop_at": stop_at})
    assert loop.progress.batches_trained == stop_at
    assert loop.last_checkpoint is not None
    resumed, loop2 = _fit(trial_class, hparams, latest=loop.last_checkpoint)
    assert loop2.progress.batches_trained == LENGTH
    for a, b in zip(gathered_weights(straight), gathered_weights(resumed), strict=True):
        assert torch.equal(a, b), (a, b)
    assert not all(
        torch.equal(a, b)
        for a, b in zip(gathered_weights(straight), gathered_weights(stopped), strict=True)
    )


def test_trains_validates_and_checkpoints_in_the_sharded_layout(trialkit_home: Path) -> None:
    trial, loop = _fit(LinearTrial, {"ds": {}}, checkpoint_period=tkds.Batch(15))
    assert loop.progress.batches_trained == LENGTH
    assert loop.progress.records_trained == LENGTH * 4
    assert loop.last_validation["val_loss"] < 5
    path = trialkit_home / "checkpoints" / str(loop.last_checkpoint)
    files = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}
    expected = {"det_state_dict_rank0.pth", "trial_state.pkl", "load_data.json", "metadata.json"}
    assert expected <= files, sorted(files)
    assert "model0/mp_rank_00_model_states.pt" in files
    assert any(f.startswith("code/") for f in files)


def test_indices_are_global_across_workloads() -> None:
    # Determined's 0.38 DeepSpeed loop restarted batch_idx at 0 for every workload (QUIRK).
    trial, _ = _fit(LinearTrial, {"ds": {}}, validation_period=tkds.Batch(7))
    epoch_len = 96 // 4
    assert trial.seen == [(b // epoch_len, b) for b in range(LENGTH)]  # type: ignore[attr-defined]


def test_gradient_accumulation_calls_train_batch_per_micro_batch() -> None:
    hp = {"ds": {"gradient_accumulation_steps": 3}}
    trial, loop = _fit(LinearTrial, hp, max_length=tkds.Batch(4))
    assert trial.context.get_num_micro_batches_per_slot() == 3
    assert [b for _, b in trial.seen] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]  # type: ignore[attr-defined]
    assert trial.context.models[0].global_steps == 4
    assert loop.progress.records_trained == 4 * 12
    assert loop.epoch_len == 96 // 4 // 3


@pytest.mark.parametrize(
    ("stage", "accumulation", "stop_at"),
    [(0, 1, 1), (0, 1, 24), (1, 2, 7), (2, 1, 13), (3, 2, 11)],
)
def test_resume_after_a_stop_is_exact(stage: int, accumulation: int, stop_at: int) -> None:
    zero = {"stage": stage, "stage3_param_persistence_threshold": 0}  # ZeRO-3: partition all
    hp = {"ds": {"zero_optimization": zero, "gradient_accumulation_steps": accumulation}}
    _resumed_equals_uninterrupted(LinearTrial, hp, stop_at)


def test_two_engines_resume_exactly() -> None:
    _resumed_equals_uninterrupted(GANTrial, {"ds": {"zero_optimization": {"stage": 1}}}, 9)


def test_pipeline_engine_takes_whole_steps_and_resumes_exactly() -> None:
    hp = {"ds": {"gradient_accumulation_steps": 2}}
    trial, loop = _fit(PipelineTrial, hp, max_length=tkds.Batch(6))
    assert trial.context.use_pipeline_parallel
    assert trial.engine.global_steps == 6  # type: ignore[attr-defined]
    assert loop.epoch_len == 96 // 4 // 2
    assert loop.last_validation["val_loss"] > 0
    _resumed_equals_uninterrupted(PipelineTrial, hp, 5)


def test_disabled_auto_accumulation_calls_train_batch_once_per_step() -> None:
    hp = {"ds": {"gradient_accumulation_steps": 3}}
    auto, _ = _fit(LinearTrial, hp, max_length=tkds.Batch(5))
    manual, _ = _fit(ManualAccumulationTrial, hp, max_length=tkds.Batch(5))
    assert [b for _, b in manual.seen] == [b for b in range(5) for _ in range(3)]  # type: ignore[attr-defined]
    for a, b in zip(gathered_weights(auto), gathered_weights(manual), strict=True):
        assert torch.equal(a, b)


def test_loaders_may_be_none_and_context_helpers_work() -> None:
    trial, loop = _fit(NoDataTrial, {"ds": {}}, max_length=tkds.Batch(4))
    assert loop.last_validation["val_loss"] >= 0
    assert loop.last_validation["records_seen"] == 8  # the custom reducer, reset per workload
    ctx = trial.context
    assert ctx.current_train_batch() == 3 and ctx.get_train_micro_batch_size_per_gpu() == 4
    assert trial.epoch_flags == [(True, False, 0)] + [(False, False, 0)] * 3  # type: ignore[attr-defined]


def test_save_and_load_hooks_can_be_overridden() -> None:
    _, loop = _fit(CustomSaveTrial, {"ds": {}, "stop_at": 3})
    _fit(CustomSaveTrial, {"ds": {}}, latest=loop.last_checkpoint, max_length=tkds.Batch(4))
    assert CustomSaveTrial.loaded_note == "steps 3"


def test_a_checkpoint_without_the_engine_tag_is_an_error(trialkit_home: Path) -> None:
    _, loop = _fit(LinearTrial, {"ds": {}, "stop_at": 2})
    path = trialkit_home / "checkpoints" / str(loop.last_checkpoint)
    (path / "model0").rename(path / "other")
    # Without its manifest the checkpoint reads as one saved before manifests (loaded unchecked),
    # so the harness, not the integrity check, meets the missing tag.
    (path / MANIFEST_NAME).unlink()
    with pytest.raises(RuntimeError, match="no DeepSpeed state for engine 0 \\(tag model0\\)"):
        _fit(LinearTrial, {"ds": {}}, latest=loop.last_checkpoint)


def test_evaluate_full_dataset() -> None:
    _, loop = _fit(FullDatasetTrial, {"ds": {}}, max_length=tkds.Batch(5))
    assert loop.last_validation["val_records"] == 32


class _NoEngine(LinearTrial):
    def __init__(self, context: tkds.DeepSpeedTrialContext) -> None:
        self.context = context


class _BothEvaluations(FullDatasetTrial):
    evaluate_batch = LinearTrial.evaluate_batch


@pytest.mark.parametrize(
    ("trial_class", "message"),
    [
        (_NoEngine, "did not call context.wrap_model_engine"),
        (_BothEvaluations, "defines both evaluate_batch and evaluate_full_dataset"),
    ],
)
def test_contract_errors_are_one_line(trial_class: Any, message: str) -> None:
    with pytest.raises(tkds.TrialContractError, match=message):
        _fit(trial_class, {"ds": {}})


def test_wrap_model_engine_refuses_a_plain_module() -> None:
    with tkds.init(hparams={}) as ctx:
        with pytest.raises(TypeError, match="takes the engine deepspeed.initialize"):
            ctx.wrap_model_engine(torch.nn.Linear(2, 1))
        with pytest.raises(RuntimeError, match="wrap a model engine"):
            ctx.get_train_micro_batch_size_per_gpu()
        with pytest.raises(RuntimeError, match="after wrap_model_engine"):
            ctx.set_mpu(tkds.make_data_parallel_mpu(ctx.distributed))
