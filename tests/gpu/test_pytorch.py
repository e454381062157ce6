"""PyTorchTrial on the GPU: fp32, fp16 AMP through ``context.wrap_scaler`` with one overflowing
loss, bf16 autocast, ``experimental.use_amp()`` with gradient aggregation and clipping, and the
exact (bitwise) resume of tests/pytorch on CUDA with deterministic algorithms."""

from __future__ import annotations

import math
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from tests.pytorch import test_resume  # noqa: E402
from tests.pytorch.trials import RegressionTrial, weights  # noqa: E402
from trialkit import pytorch  # noqa: E402

pytestmark = pytest.mark.gpu

HP = {"global_batch_size": 8, "dropout": 0.0}


def _fit(
    trial_cls: Any,
    *,
    n: int = 12,
    agg: int = 1,
    latest: str | None = None,
    seed: int = 0,
    **kw: Any,
) -> tuple[Any, pytorch.Trainer]:
    with pytorch.init(hparams=dict(HP), aggregation_frequency=agg, seed=seed) as ctx:
        trial = trial_cls(ctx, **kw)
        trainer = pytorch.Trainer(trial, ctx)
        trainer.fit(max_length=pytorch.Batch(n), checkpoint_policy="none", latest_checkpoint=latest)
    return trial, trainer


def _on(trial: Any, device: str) -> bool:
    return all(p.device.type == device for p in trial.context.models[0].parameters())


def test_fp32_trains_on_the_gpu(device: str) -> None:
    before_trial = None

    class Snap(RegressionTrial):
        def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
            nonlocal before_trial
            super().__init__(context)
            before_trial = [p.detach().clone() for p in self.model.parameters()]

    trial, trainer = _fit(Snap)
    assert trial.context.device.type == device and _on(trial, device)
    assert trainer.loop is not None and trainer.loop.progress.batches_trained == 12
    after = weights(trial)
    assert before_trial is not None
    assert all(torch.isfinite(a).all() for a in after)
    assert not all(torch.equal(a, b) for a, b in zip(after, before_trial, strict=True))


class ScaledTrial(RegressionTrial):
    """fp16 autocast with a GradScaler registered through ``context.wrap_scaler``; the loss of
    batch ``overflow_at`` is made infinite, so the scaler must skip that step and halve its scale."""

    def __init__(
        self, context: pytorch.PyTorchTrialContext, overflow_at: int = 4, stop_at: int | None = None
    ) -> None:
        super().__init__(context, stop_at=stop_at)
        dev = context.device.type
        self.scaler = context.wrap_scaler(torch.amp.GradScaler(dev, init_scale=2.0**12))
        self.overflow_at = overflow_at
        self.skipped: list[int] = []
        self.unchanged_on_skip: bool | None = None

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        with torch.autocast(device_type=self.context.device.type, dtype=torch.float16):
            out = self.model(x)
            assert out.dtype == torch.float16
            loss = nn.functional.mse_loss(out.float(), y)
        backward_loss = loss * math.inf if batch_idx == self.overflow_at else loss
        self.context.backward(self.scaler.scale(backward_loss))
        before = [p.detach().clone() for p in self.model.parameters()]
        scale = self.scaler.get_scale()
        self.context.step_optimizer(self.opt, scaler=self.scaler)
        self.scaler.update()
        if self.scaler.get_scale() < scale:
            self.skipped.append(batch_idx)
            after = list(self.model.parameters())
            self.unchanged_on_skip = all(
                torch.equal(a, b) for a, b in zip(before, after, strict=True)
            )
        if self.stop_at is not None and batch_idx + 1 == self.stop_at:
            self.context.set_stop_requested(True)
        return {"loss": loss}


def test_wrap_scaler_fp16_skips_the_overflowing_step_and_the_harness_counts_it(
    device: str, deterministic: None
) -> None:
    full, trainer = _fit(ScaledTrial)
    assert _on(full, device)
    assert full.skipped == [4], "the scaler skipped exactly the overflowing batch"
    assert full.unchanged_on_skip is True, "a skipped step leaves the weights as they were"
    assert full.scaler.get_scale() == 2.0**11
    # The batch whose step was skipped still counts as trained (Determined counts batches).
    assert trainer.loop is not None and trainer.loop.progress.batches_trained == 12
    assert all(torch.isfinite(w).all() for w in weights(full))
    # The scaler's state travels in the checkpoint: stopped after the overflow and resumed with
    # another seed, the run ends bitwise where the uninterrupted one did, at the same scale.
    _, first = _fit(ScaledTrial, stop_at=7)
    assert first.loop is not None and first.loop.last_checkpoint is not None
    resumed, _ = _fit(ScaledTrial, latest=first.loop.last_checkpoint, seed=99)
    assert resumed.scaler.get_scale() == 2.0**11 and resumed.skipped == []
    for a, b in zip(weights(full), weights(resumed), strict=True):
        assert torch.equal(a, b)


class Bf16Trial(RegressionTrial):
    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        with torch.autocast(device_type=self.context.device.type, dtype=torch.bfloat16):
            out = self.model(x)
            assert out.dtype == torch.bfloat16
        loss = nn.functional.mse_loss(out.float(), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss}


def test_bf16_autocast(device: str) -> None:
    trial, trainer = _fit(Bf16Trial)
    assert _on(trial, device)
    assert trainer.loop is not None and trainer.loop.progress.batches_trained == 12
    assert all(p.dtype == torch.float32 for p in trial.model.parameters())  # master weights fp32
    assert all(torch.isfinite(w).all() for w in weights(trial))


class AutoAmpClipTrial(RegressionTrial):
    """experimental.use_amp() (fp16 + GradScaler on CUDA), aggregation 2, gradient clipping."""

    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        context.experimental.use_amp()
        super().__init__(context)
        self.norms: list[tuple[float, float]] = []  # (before, after) clipping, per real step

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        out = self.model(x)
        assert out.dtype == torch.float32  # the harness casts autocast's outputs back
        loss = nn.functional.mse_loss(out, y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt, clip_grads=self._clip)
        return {"loss": loss}

    def _clip(self, params: Any) -> None:
        params = list(params)
        before = float(nn.utils.clip_grad_norm_(params, max_norm=0.05))
        after = float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])))
        self.norms.append((before, after))


def test_use_amp_with_aggregation_and_clipping(device: str) -> None:
    trial, trainer = _fit(AutoAmpClipTrial, agg=2)
    ctx = trial.context
    if device == "cuda":
        assert (
            isinstance(ctx.runtime.scaler, torch.amp.GradScaler) and ctx._amp_dtype == torch.float16
        )
    assert trainer.loop is not None and trainer.loop.progress.batches_trained == 12
    # Clipping runs once per aggregation window, on unscaled gradients: a norm still multiplied
    # by the scale (65536 at the start) would be thousands, not a regression's few units.
    assert len(trial.norms) == 6
    finite = [(b, a) for b, a in trial.norms if math.isfinite(b)]
    assert finite, trial.norms
    assert all(b < 100 for b, _ in finite), trial.norms
    assert all(a <= 0.05 * 1.01 for b, a in finite if b > 0.05), trial.norms
    assert all(torch.isfinite(w).all() for w in weights(trial))


@pytest.mark.parametrize("k", [1, 5, 9])
def test_exact_resume_on_the_gpu(device: str, deterministic: None, k: int) -> None:
    """tests/pytorch/test_resume.py's check (shuffling, dropout, aggregation 2, an LR schedule),
    here on the GPU: stopped at batch k and resumed, the weights equal an uninterrupted run's."""
    full, _ = test_resume._fit(seed=0)
    assert _on(full, device)
    test_resume.test_preempt_at_k_and_resume_is_bitwise_identical(k)


def test_metrics_on_the_gpu_reach_the_host_once_a_report(device: str) -> None:
    """fp32, bf16 and integer metric tensors on the device: the values ``.item()`` gives, copied
    in one stack per dtype, and training reads none of them batch by batch."""
    from tests.pytorch.test_host_metrics import _CountOps
    from trialkit.pytorch.shared import metrics_to_python

    g = torch.Generator(device=device).manual_seed(0)
    batches = [
        {
            "loss": torch.rand((), device=device, generator=g),
            "bf16": torch.rand((1,), device=device, generator=g).to(torch.bfloat16),
            "n": torch.tensor(i, device=device),
        }
        for i in range(50)
    ]
    want = [{k: v.item() for k, v in m.items()} for m in batches]
    with _CountOps() as ops:
        got = metrics_to_python(batches)
    assert got == want
    assert ops.counts.get("_local_scalar_dense", 0) == 0 and ops.counts["stack"] == 3, ops.counts

    with _CountOps() as ops:
        _fit(RegressionTrial, n=12)
    # RegressionTrial's loader seeds read a number or two per epoch, never one per batch
    assert ops.counts.get("_local_scalar_dense", 0) < 12, ops.counts
