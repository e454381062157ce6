"""DeepSpeedTrial on the GPU: ZeRO-1/2/3 with fp16 and bf16 and exact resume (tests/deepspeed's
check), a fused optimizer JIT-built with nvcc, activation checkpointing, and a Core API script
under the deepspeed launcher. Skips where deepspeed is not installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
deepspeed = pytest.importorskip("deepspeed")

from tests.deepspeed import test_trial as ds_cpu  # noqa: E402
from tests.deepspeed.ds_trials import LinearTrial, gathered_weights  # noqa: E402
from trialkit import deepspeed as tkds  # noqa: E402

from .conftest import REPO, child_env  # noqa: E402

pytestmark = pytest.mark.gpu

PRECISIONS = {
    "fp16": {"fp16": {"enabled": True, "initial_scale_power": 8}},
    "bf16": {"bf16": {"enabled": True}},
}


class MixedPrecisionTrial(LinearTrial):
    """LinearTrial with inputs cast to the engine's dtype (DeepSpeed casts weights, not inputs)
    and the loss taken in fp32; ``ckpt`` runs the first layer under DeepSpeed's activation
    checkpointing."""

    def __init__(self, context: tkds.DeepSpeedTrialContext) -> None:
        super().__init__(context)
        e = self.engine
        self.dtype = (
            torch.float16 if e.fp16_enabled() else torch.bfloat16 if e.bfloat16_enabled() else None
        )
        self.ckpt = bool(context.get_hparams().get("ckpt"))
        if self.ckpt:
            deepspeed.checkpointing.configure(None, deepspeed_config=e.config)

    def _loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.dtype is not None:
            x = x.to(self.dtype)
        if self.ckpt:
            first, *rest = self.engine.module
            # DeepSpeed's checkpoint is reentrant: with no input requiring grad, the layer inside
            # would get no gradient at all.
            h = deepspeed.checkpointing.checkpoint(first, x.requires_grad_(True))
            out = torch.nn.Sequential(*rest)(h)
        else:
            out = self.engine(x)
        assert self.dtype is None or out.dtype == self.dtype
        return torch.nn.functional.mse_loss(out.float(), y)

    def train_batch(self, dataloader_iter: Any, epoch_idx: int, batch_idx: int) -> Any:
        self.seen.append((epoch_idx, batch_idx))
        x, y = self.context.to_device(next(dataloader_iter))
        assert x.device.type == self.engine.device.type
        loss = self._loss(x, y)
        self.engine.backward(loss)
        self.engine.step()
        if self.stop_at is not None and batch_idx + 1 == self.stop_at:
            self.context.set_stop_requested(True)
        return {"loss": loss}

    def evaluate_batch(self, dataloader_iter: Any, batch_idx: int) -> dict[str, Any]:
        x, y = self.context.to_device(next(dataloader_iter))
        return {"val_loss": self._loss(x, y)}


def _hp(stage: int, precision: str, **ds: Any) -> dict[str, Any]:
    zero = {"stage": stage, "stage3_param_persistence_threshold": 0}
    return {"ds": {"zero_optimization": zero, **PRECISIONS[precision], **ds}}


@pytest.fixture(autouse=True)
def _extensions_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """DeepSpeed's JIT builds into a directory of this session (a killed build's lock in
    ~/.cache/torch_extensions would hang every later run)."""
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(tmp_path_factory.getbasetemp() / "ext"))


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_zero_stage_in_mixed_precision_resumes_exactly(
    cuda: int, deterministic: None, stage: int, precision: str
) -> None:
    hp = _hp(stage, precision)
    trial, loop = ds_cpu._fit(MixedPrecisionTrial, hp, max_length=tkds.Batch(12))
    engine = trial.engine
    assert engine.device.type == "cuda" and engine.zero_optimization_stage() == stage
    assert (engine.fp16_enabled(), engine.bfloat16_enabled()) == (
        precision == "fp16",
        precision == "bf16",
    )
    assert loop.progress.batches_trained == 12
    assert all(torch.isfinite(w.float()).all() for w in gathered_weights(trial))
    ds_cpu._resumed_equals_uninterrupted(MixedPrecisionTrial, hp, stop_at=13)


def test_fused_adam_jit_built_with_nvcc(cuda: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from deepspeed.ops.adam import FusedAdam

    # DeepSpeed 0.19's JIT builder reads TORCH_CUDA_ARCH_LIST entries as digits only: an image that
    # sets Hopper's arch-specific "9.0a" makes it raise (seen on the H200 check, docs/gpu.md).
    # Build for this card's own capability, as DeepSpeed does when the variable is unset.
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "{}.{}".format(*torch.cuda.get_device_capability()))

    hp = _hp(2, "bf16", optimizer={"type": "Adam", "params": {"lr": 0.05, "torch_adam": False}})
    trial, loop = ds_cpu._fit(MixedPrecisionTrial, hp, max_length=tkds.Batch(8))
    assert isinstance(trial.engine.basic_optimizer, FusedAdam)
    assert loop.progress.batches_trained == 8
    assert all(torch.isfinite(w.float()).all() for w in gathered_weights(trial))


def test_activation_checkpointing(device: str) -> None:
    plain, _ = ds_cpu._fit(MixedPrecisionTrial, {"ds": {}}, max_length=tkds.Batch(6))
    ckpt, loop = ds_cpu._fit(
        MixedPrecisionTrial, {"ds": {}, "ckpt": True}, max_length=tkds.Batch(6)
    )
    assert ckpt.engine.device.type == device and loop.progress.batches_trained == 6
    # Recomputing the first layer in backward changes nothing but memory: same weights (dropout
    # sits after it, and DeepSpeed's checkpoint restores the RNG state for the recomputation).
    for a, b in zip(gathered_weights(plain), gathered_weights(ckpt), strict=True):
        torch.testing.assert_close(a, b)


CORE_SCRIPT = """
import json, os, sys
import torch, deepspeed
from trialkit import core

deepspeed.init_distributed()
d = core.DistributedContext.from_deepspeed()
model = torch.nn.Linear(4, 1)
cfg = {"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True},
       "optimizer": {"type": "Adam", "params": {"lr": 0.01, "torch_adam": True}},
       "zero_optimization": {"stage": 2}}
engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
with core.init(distributed=d) as ctx:
    for step in range(1, 4):
        x = torch.randn(2, 4, device=engine.device, dtype=torch.bfloat16)
        loss = engine(x).float().pow(2).mean()
        engine.backward(loss)
        engine.step()
        ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": loss.item()})
    with ctx.checkpoint.store_path({"steps_completed": 3}) as (path, sid):
        engine.save_checkpoint(str(path), tag="ds")
print("RESULT " + json.dumps({"rank": d.rank, "size": d.size, "device": str(engine.device),
                              "ckpt": sid}), flush=True)
"""


@pytest.mark.integration
def test_core_api_script_under_the_deepspeed_launcher(cuda: int, tmp_path: Path) -> None:
    script = tmp_path / "core_ds.py"
    script.write_text(CORE_SCRIPT)
    bin_dir = str(Path(sys.executable).parent)
    env = child_env(PATH=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))
    p = subprocess.run(
        [sys.executable, "-m", "trialkit.launch.deepspeed", "--nproc-per-node", "1", "--",
         sys.executable, str(script)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    # the launcher's wrap_rank prefixes each line of a worker's output with "[rank=0] || "
    [line] = [ln for ln in out.splitlines() if "RESULT " in ln]
    assert '"size": 1' in line and '"device": "cuda:0"' in line and '"ckpt": null' not in line
