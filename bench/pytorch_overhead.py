"""Benchmark: per-batch overhead of PyTorchTrial vs. a hand-written PyTorch loop (and
PyTorch Lightning's Trainer when it is installed), same model, data and seed, one process.

Goal (issue F4): overhead <= 2 % at ~5 ms batches.

Method (after Lightning's parity tests): the model is an MLP whose width is calibrated so one
hand-written training step takes about 5 ms on this machine (one torch thread, for stable
timings). Each contender trains the same number of batches from the same initial weights on the
same unshuffled data; a timestamp is taken at the start of every training step, and the per-batch
time is the gap between consecutive timestamps (so everything the loop does between steps is
counted: data loading, metric bookkeeping, reports every 100 batches, stop checks). The first
batches of each round are warm-up. Rounds alternate between contenders. Printed: median and mean
ms/batch and the ratio to the hand-written loop, and whether final weights agree.
Timing is printed, not asserted.

Usage: ``python bench/pytorch_overhead.py [--rounds 5] [--batches 300]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from typing import Any

import torch
from torch import nn
from torch.utils.data import TensorDataset

BATCH = 64
IN, OUT = 256, 10
WARMUP = 20


def make_data(n_batches: int) -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    n = BATCH * n_batches
    return TensorDataset(torch.randn(n, IN, generator=g), torch.randint(0, OUT, (n,), generator=g))


def make_model(width: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(IN, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, OUT)
    )


def gaps(stamps: list[float]) -> list[float]:
    return [b - a for a, b in zip(stamps[WARMUP:], stamps[WARMUP + 1 :], strict=False)]


# Hand-written loop -----------------------------------------------------------------------------


def run_raw(width: int, data: TensorDataset, batches: int) -> tuple[list[float], nn.Module]:
    model = make_model(width)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=False)
    stamps: list[float] = []
    model.train()
    it = iter(loader)
    for _ in range(batches + 1):
        stamps.append(time.perf_counter())
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return gaps(stamps), model


# trialkit PyTorchTrial ---------------------------------------------------------------------------


def run_trialkit(width: int, data: TensorDataset, batches: int) -> tuple[list[float], nn.Module]:
    from trialkit import pytorch

    stamps: list[float] = []

    class Trial(pytorch.PyTorchTrial):
        def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
            self.context = context
            self.model = context.wrap_model(make_model(width))
            self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.01))

        def build_training_data_loader(self) -> pytorch.DataLoader:
            return pytorch.DataLoader(data, batch_size=BATCH, shuffle=False)

        def build_validation_data_loader(self) -> pytorch.DataLoader:
            return pytorch.DataLoader(
                TensorDataset(data.tensors[0][:BATCH], data.tensors[1][:BATCH]), batch_size=BATCH
            )

        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            stamps.append(time.perf_counter())
            x, y = batch
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.context.backward(loss)
            self.context.step_optimizer(self.opt)
            return {"loss": loss}

        def evaluate_batch(self, batch: Any) -> dict[str, Any]:
            x, y = batch
            return {"val_loss": nn.functional.cross_entropy(self.model(x), y)}

    class End(pytorch.PyTorchCallback):
        def on_training_workload_end(self, avg: Any, batch_metrics: Any) -> None:
            pass

    with pytorch.init() as ctx:
        trial = Trial(ctx)
        trainer = pytorch.Trainer(trial, ctx)
        # One extra batch: the gap after the last timed batch is then a real batch boundary.
        trainer.fit(max_length=pytorch.Batch(batches + 1), checkpoint_policy="none")
    return gaps(stamps[: batches + 1]), trial.model


# PyTorch Lightning ----------------------------------------------------------------------------


def run_lightning(
    width: int, data: TensorDataset, batches: int
) -> tuple[list[float], nn.Module] | None:
    try:
        import lightning as L
    except ImportError:
        return None
    stamps: list[float] = []

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = make_model(width)

        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            stamps.append(time.perf_counter())
            x, y = batch
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.log("loss", loss)
            return loss

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.01)

        def train_dataloader(self) -> torch.utils.data.DataLoader:
            return torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=False)

    module = Module()
    trainer = L.Trainer(
        max_steps=batches + 1,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
    )
    trainer.fit(module)
    return gaps(stamps[: batches + 1]), module.model


def calibrate(target_ms: float) -> int:
    """The MLP width whose hand-written step takes about ``target_ms`` (lowest of three medians,
    so a burst of load from other processes does not shrink the model)."""
    data = make_data(80)
    width = 600
    for _ in range(8):
        ms = min(statistics.median(run_raw(width, data, 80)[0]) for _ in range(3)) * 1000
        if abs(ms - target_ms) / target_ms < 0.05:
            break
        width = max(32, int(width * (target_ms / ms) ** 0.5))
    return width


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--target-ms", type=float, default=5.0)
    parser.add_argument("--width", type=int, default=0, help="skip calibration; use this MLP width")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.disable(logging.WARNING)
    os.environ["TRIALKIT_HOME"] = tempfile.mkdtemp(prefix="trialkit-bench-")
    os.environ.pop("TRIALKIT_CLUSTER_INFO", None)
    width = args.width or calibrate(args.target_ms)
    data = make_data(args.batches + 1)
    contenders = {
        "hand-written": run_raw,
        "trialkit PyTorchTrial": run_trialkit,
        "Lightning Trainer": run_lightning,
    }
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    finals: dict[str, nn.Module] = {}
    for _ in range(args.rounds):
        for name, fn in contenders.items():
            out = fn(width, data, args.batches)
            if out is None:
                continue
            times, model = out
            samples[name] += times
            finals[name] = model
    base_med = statistics.median(samples["hand-written"])
    base_mean = statistics.fmean(samples["hand-written"])
    print(
        f"MLP {IN}-{width}-{width}-{OUT}, batch {BATCH}, 1 torch thread, {args.rounds} rounds x {args.batches} batches"
    )
    print(f"{'loop':24} {'median ms':>10} {'mean ms':>10} {'median ratio':>13} {'mean ratio':>11}")
    ref = [p.detach() for p in finals["hand-written"].parameters()]
    for name, times in samples.items():
        if not times:
            print(f"{name:24} (not installed: pip install lightning)")
            continue
        med, mean = statistics.median(times), statistics.fmean(times)
        print(
            f"{name:24} {med * 1000:10.3f} {mean * 1000:10.3f} {med / base_med:13.4f} {mean / base_mean:11.4f}"
        )
    for name, model in finals.items():
        if name == "hand-written":
            continue
        same = all(torch.equal(a, b.detach()) for a, b in zip(ref, model.parameters(), strict=True))
        close = all(
            torch.allclose(a, b.detach(), atol=1e-6)
            for a, b in zip(ref, model.parameters(), strict=True)
        )
        print(f"final weights vs hand-written, {name}: bitwise equal={same}, allclose={close}")
    overhead = (statistics.median(samples["trialkit PyTorchTrial"]) / base_med - 1) * 100
    print(f"PyTorchTrial per-batch overhead (median): {overhead:+.2f}% (goal <= 2%)")


if __name__ == "__main__":
    main()
