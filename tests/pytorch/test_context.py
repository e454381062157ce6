"""PyTorchTrialContext: aggregation math, LR step modes, AMP on CPU, clipping, helpers."""

from __future__ import annotations

import weakref
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from trialkit import pytorch  # noqa: E402
from trialkit.pytorch import LRScheduler  # noqa: E402

from .trials import FEATURES, dataset  # noqa: E402


def _ctx(**kw: Any) -> Any:
    return pytorch.init(hparams={"global_batch_size": 8, **kw.pop("hparams", {})}, **kw)


def test_aggregation_equals_one_large_batch_step() -> None:
    data = dataset(0, n=96)
    x, y = data.tensors
    torch.manual_seed(0)
    big = nn.Linear(FEATURES, 1)
    small = nn.Linear(FEATURES, 1)
    small.load_state_dict(big.state_dict())
    opt_big = torch.optim.SGD(big.parameters(), lr=0.1, momentum=0.9)
    with _ctx(aggregation_frequency=4) as ctx:
        model = ctx.wrap_model(small)
        opt = ctx.wrap_optimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        for step in range(3):
            lo = step * 32
            nn.functional.mse_loss(big(x[lo : lo + 32]), y[lo : lo + 32]).backward()
            opt_big.step()
            opt_big.zero_grad()
            for i in range(4):
                ctx.runtime.current_batch_idx = step * 4 + i
                sl = slice(lo + 8 * i, lo + 8 * i + 8)
                ctx.backward(nn.functional.mse_loss(model(x[sl]), y[sl]))
                ctx.step_optimizer(opt)
                if i < 3:  # no step inside the window
                    assert all(p.grad is not None for p in model.parameters())
    for a, b in zip(big.parameters(), small.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_aggregation_without_averaging_sums_gradients() -> None:
    with _ctx(aggregation_frequency=2) as ctx:
        model = ctx.wrap_model(nn.Linear(1, 1, bias=False))
        nn.init.zeros_(model.weight)
        opt = ctx.wrap_optimizer(
            torch.optim.SGD(model.parameters(), lr=1.0), average_aggregated_gradients=False
        )
        for i in range(2):
            ctx.runtime.current_batch_idx = i
            ctx.backward(model(torch.ones(1, 1)).sum() * -1)
            ctx.step_optimizer(opt)
        assert model.weight.item() == pytest.approx(2.0)  # two summed grads of -1


def test_step_optimizer_zeroes_grads_and_frees_them_at_the_next_backward() -> None:
    with _ctx() as ctx:
        model = ctx.wrap_model(nn.Linear(2, 1))
        opt = ctx.wrap_optimizer(torch.optim.SGD(model.parameters(), lr=0.1))
        ctx.runtime.current_batch_idx = 0
        ctx.backward(model(torch.ones(4, 2)).sum())
        old = weakref.ref(model.weight.grad)
        ctx.step_optimizer(opt)
        assert all(p.grad is None for p in model.parameters())  # zeroed, as Determined does
        assert old() is not None  # on CPU the tensor lives on until the next backward...
        ctx.runtime.current_batch_idx = 1
        ctx.backward(model(torch.ones(4, 2)).sum())
        assert old() is None  # ...which frees it before allocating the new gradients
        torch.testing.assert_close(model.weight.grad, torch.full((1, 2), 4.0))


def test_auto_zero_grads_false_is_refused_with_aggregation() -> None:
    with _ctx(aggregation_frequency=2) as ctx:
        model = ctx.wrap_model(nn.Linear(1, 1))
        opt = ctx.wrap_optimizer(torch.optim.SGD(model.parameters(), lr=1.0))
        with pytest.raises(ValueError, match="auto_zero_grads"):
            ctx.step_optimizer(opt, auto_zero_grads=False)


def test_clip_grads_sees_the_flat_parameter_list() -> None:
    with _ctx() as ctx:
        model = ctx.wrap_model(nn.Linear(3, 1))
        opt = ctx.wrap_optimizer(torch.optim.SGD(model.parameters(), lr=0.0))
        ctx.runtime.current_batch_idx = 0
        ctx.backward(model(torch.full((1, 3), 100.0)).sum())
        seen: list[Any] = []

        def clip(params: Any) -> None:
            seen.extend(params)
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            total = torch.norm(torch.stack([p.grad.norm() for p in params]))
            assert total.item() == pytest.approx(1.0, rel=1e-4)

        ctx.step_optimizer(opt, clip_grads=clip)
        assert len(seen) == 2


@pytest.mark.parametrize(
    ("mode", "freq", "agg", "epoch_len", "batches", "expected"),
    [
        # STEP_EVERY_BATCH: every `freq` batches, counted across the aggregation window.
        ("STEP_EVERY_BATCH", 1, 1, 4, 8, 8),
        ("STEP_EVERY_BATCH", 3, 1, 4, 8, 2),
        ("STEP_EVERY_BATCH", 1, 2, 4, 8, 8),
        # STEP_EVERY_OPTIMIZER_STEP counts optimizer steps (trialkit's decision on the QUIRK):
        # 8 batches with aggregation 2 are 4 optimizer steps; every 2nd of them -> 2 steps.
        ("STEP_EVERY_OPTIMIZER_STEP", 1, 2, 4, 8, 4),
        ("STEP_EVERY_OPTIMIZER_STEP", 2, 2, 4, 8, 2),
        ("STEP_EVERY_OPTIMIZER_STEP", 3, 1, 4, 9, 3),
        # STEP_EVERY_EPOCH: at each epoch end (every `freq` epochs).
        ("STEP_EVERY_EPOCH", 1, 1, 4, 12, 3),
        ("STEP_EVERY_EPOCH", 2, 1, 4, 12, 1),
        ("STEP_EVERY_EPOCH", 1, 2, 3, 12, 4),
        ("MANUAL_STEP", 1, 1, 4, 8, 0),
    ],
)
def test_lr_step_modes(
    mode: str, freq: int, agg: int, epoch_len: int, batches: int, expected: int
) -> None:
    sched = LRScheduler(object(), LRScheduler.StepMode[mode], frequency=freq)
    steps = sum(
        sched.steps_after_batch(i, agg, epoch_len) for i in range(batches) if (i + 1) % agg == 0
    )
    assert steps == expected


def test_reduce_lr_on_plateau_needs_manual_step() -> None:
    with _ctx() as ctx:
        model = ctx.wrap_model(nn.Linear(1, 1))
        opt = ctx.wrap_optimizer(torch.optim.SGD(model.parameters(), lr=1.0))
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
        with pytest.raises(ValueError, match="MANUAL_STEP"):
            ctx.wrap_lr_scheduler(plateau, LRScheduler.StepMode.STEP_EVERY_EPOCH)
        assert ctx.wrap_lr_scheduler(plateau, LRScheduler.StepMode.MANUAL_STEP) is plateau
        stray = torch.optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
        with pytest.raises(ValueError, match="wrap_optimizer"):
            ctx.wrap_lr_scheduler(
                torch.optim.lr_scheduler.StepLR(stray, 1), LRScheduler.StepMode.STEP_EVERY_EPOCH
            )


def test_use_amp_on_cpu_autocasts_to_bfloat16_and_returns_fp32() -> None:
    seen: list[torch.dtype] = []

    class Probe(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = self.lin(x)
            seen.append(out.dtype)
            return out

    with _ctx() as ctx:
        ctx.experimental.use_amp()
        model = ctx.wrap_model(Probe())
        opt = ctx.wrap_optimizer(torch.optim.SGD(model.parameters(), lr=0.1))
        ctx.runtime.current_batch_idx = 0
        out = model(torch.randn(2, 4))
        assert seen == [torch.bfloat16] and out.dtype == torch.float32
        before = model.lin.weight.detach().clone()
        ctx.backward(out.pow(2).mean())
        ctx.step_optimizer(opt, clip_grads=lambda ps: torch.nn.utils.clip_grad_norm_(ps, 1.0))
        assert not torch.equal(before, model.lin.weight)
        assert model.lin.weight.dtype == torch.float32
        with pytest.raises(RuntimeError, match="before wrap_model"):
            ctx.experimental.use_amp()


def test_wrap_scaler_is_checkpointed_and_used_by_step_optimizer() -> None:
    with _ctx() as ctx:
        scaler = ctx.wrap_scaler(torch.amp.GradScaler("cpu", init_scale=4.0))
        model = ctx.wrap_model(nn.Linear(2, 1))
        opt = ctx.wrap_optimizer(torch.optim.SGD(model.parameters(), lr=0.1))
        ctx.runtime.current_batch_idx = 0
        ctx.backward(scaler.scale(model(torch.ones(1, 2)).sum()))
        ctx.step_optimizer(opt, scaler=scaler)
        scaler.update()
        with pytest.raises(RuntimeError, match="once"):
            ctx.wrap_scaler(torch.amp.GradScaler("cpu"))


def test_configure_apex_amp_without_apex_or_cuda_says_so() -> None:
    with _ctx() as ctx:
        model = ctx.wrap_model(nn.Linear(1, 1))
        opt = ctx.wrap_optimizer(torch.optim.SGD(model.parameters(), lr=1.0))
        assert ctx.configure_apex_amp(model, opt, enabled=False) == (model, opt)
        with pytest.raises(RuntimeError, match=r"configure_apex_amp\(\): .*apex.*use_amp"):
            ctx.configure_apex_amp(model, opt)


def test_hparams_batch_sizes_and_config_errors() -> None:
    with pytorch.init(
        hparams={"global_batch_size": 10, "lr": 0.1}, exp_conf={"data": {"a": 1}}
    ) as ctx:
        assert ctx.get_hparam("lr") == 0.1
        assert ctx.get_global_batch_size() == 10 and ctx.get_per_slot_batch_size() == 10
        assert ctx.get_data_config() == {"a": 1}
        with pytest.raises(ValueError, match="'nope' is not defined"):
            ctx.get_hparam("nope")
        with pytest.raises(RuntimeError, match="training has not started"):
            ctx.current_train_epoch()
    with pytorch.init() as ctx:
        with pytest.raises(ValueError, match="hyperparameters"):
            ctx.get_hparams()
        with pytest.raises(ValueError, match="experiment config"):
            ctx.get_data_config()
        with pytest.raises(RuntimeError, match="trial seed"):
            ctx.get_trial_seed()
        with pytest.raises(RuntimeError, match="master"):
            ctx.get_trial_id()
    with pytest.raises(ValueError, match="global_batch_size"):
        with pytorch.init(hparams={"global_batch_size": "8"}):
            pass


def test_epoch_helpers_and_device() -> None:
    with _ctx() as ctx:
        assert ctx.device == torch.device("cpu")
        ctx.runtime.epoch_len, ctx.runtime.current_batch_idx = 4, 7
        assert ctx.current_train_epoch() == 1 and ctx.is_epoch_end() and not ctx.is_epoch_start()
        ctx.runtime.current_batch_idx = 8
        assert ctx.is_epoch_start() and ctx.current_train_batch() == 8
        moved = ctx.to_device({"a": [torch.ones(1)], "b": __import__("numpy").zeros(2)})
        assert isinstance(moved["b"], torch.Tensor)


def test_wrap_reducer_same_object_twice_is_refused() -> None:
    with _ctx() as ctx:
        r = ctx.wrap_reducer(lambda xs: sum(xs), name="s")
        with pytest.raises(ValueError, match="already wrapped"):
            ctx.wrap_reducer(r)
