"""Benchmark: per-batch time of PyTorchTrial vs a hand-written loop (and Lightning's Trainer), as
the slope between a short and a long run, so start-up (model, CUDA context, cudnn autotuning,
the harness's setup) cancels.

Two parts:

- ``resnet`` (GPU): torchvision's ResNet-18 on 224x224 images, batch 256, fp16 autocast with a
  GradScaler (the Trial registers it with ``context.wrap_scaler``). Goal: PyTorchTrial <= 1.01x
  the hand-written loop.
- ``tiny``: a 16-16-1 MLP at batch 8, where Python overhead is all there is: each loop's
  microseconds per batch and, net of the hand-written loop's, the harness's and Lightning's own.
  Goal: the harness's own <= 10 us per batch. Runs on the CPU too.

Every contender reads the same pre-made batches, already where the model is (a collate function
picks them), so the figures are the loops', not data loading's. Each figure is the median over
rounds of (time of LONG batches - time of SHORT batches) / (LONG - SHORT), timed to
``torch.cuda.synchronize()`` on the GPU; contenders alternate within a round, in an order that
reverses every other round, all in this one process, after one untimed short run of each (its
imports, the local store's creation). Timing is printed, not asserted.

Usage: ``python bench/pytorch_slope.py [--device cuda] [--part resnet|tiny|both] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pytorch_overhead as po  # noqa: E402

RESNET_GOAL = 1.01
TINY_GOAL_US = 10.0


class Setup:
    """One part's model factory, batches and AMP choice on one device."""

    def __init__(self, device: str, part: str) -> None:
        self.device, self.part = device, part
        self.amp = part == "resnet" and device == "cuda"
        g = torch.Generator().manual_seed(0)
        if part == "resnet":
            self.batch, self.short, self.long = 256, 8, 28
            shape: tuple[int, ...] = (3, 224, 224)
            classes = 1000
        else:
            self.batch, self.short, self.long = 8, 100, 600
            shape, classes = (16,), 2
        self.batches = [
            (
                torch.randn(self.batch, *shape, generator=g).to(device),
                torch.randint(0, classes, (self.batch,), generator=g).to(device),
            )
            for _ in range(4)
        ]

    def model(self) -> nn.Module:
        torch.manual_seed(0)
        if self.part == "resnet":
            import torchvision

            return torchvision.models.resnet18(num_classes=1000).to(self.device)
        return nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2)).to(self.device)

    def collate(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """The pre-made batch for these indices (the loader's work is not what is measured)."""
        return self.batches[(indices[0] // self.batch) % len(self.batches)]

    def indices(self, steps: int) -> list[int]:
        return list(range(steps * self.batch))

    def sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()


def hand_written(s: Setup, steps: int) -> None:
    model = s.model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda") if s.amp else None
    loader = DataLoader(s.indices(steps), batch_size=s.batch, collate_fn=s.collate)
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16, enabled=s.amp):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()


def trialkit_trial(s: Setup, steps: int) -> None:
    from trialkit import pytorch

    class Trial(pytorch.PyTorchTrial):
        def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
            self.context = context
            self.model = context.wrap_model(s.model())
            self.opt = context.wrap_optimizer(
                torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
            )
            self.scaler = context.wrap_scaler(torch.amp.GradScaler("cuda")) if s.amp else None
            context.experimental.disable_dataset_reproducibility_checks()

        def build_training_data_loader(self) -> Any:
            return DataLoader(s.indices(steps), batch_size=s.batch, collate_fn=s.collate)

        def build_validation_data_loader(self) -> Any:
            return DataLoader(s.indices(1), batch_size=s.batch, collate_fn=s.collate)

        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            x, y = batch
            with torch.autocast("cuda", dtype=torch.float16, enabled=s.amp):
                loss = nn.functional.cross_entropy(self.model(x), y)
            if self.scaler is not None:
                self.context.backward(self.scaler.scale(loss))
                self.context.step_optimizer(self.opt, scaler=self.scaler)
                self.scaler.update()
            else:
                self.context.backward(loss)
                self.context.step_optimizer(self.opt)
            return {"loss": loss}

        def evaluate_batch(self, batch: Any) -> dict[str, Any]:
            return {}

    with pytorch.init() as ctx:
        assert ctx.device.type == s.device, (ctx.device, s.device)
        pytorch.Trainer(Trial(ctx), ctx).fit(
            max_length=pytorch.Batch(steps), checkpoint_policy="none"
        )


def lightning_trainer(s: Setup, steps: int) -> None:
    module = po.lightning_module(
        s.model,
        lambda: DataLoader(s.indices(steps), batch_size=s.batch, collate_fn=s.collate),
        momentum=0.9,
    )
    po.bare_trainer(steps, s.device).fit(module)


Contender = Callable[[Setup, int], None]


def slopes(s: Setup, contenders: dict[str, Contender], rounds: int) -> dict[str, float]:
    """Median over rounds of each contender's seconds per batch (long run minus short run)."""
    got: dict[str, list[float]] = {name: [] for name in contenders}
    for run in contenders.values():  # imports, the store's first creation, CUDA/cudnn warm-up
        run(s, s.short)
    for r in range(rounds):
        order = list(contenders) if r % 2 == 0 else list(reversed(contenders))
        for name in order:
            timed = []
            for steps in (s.short, s.long):
                s.sync()
                t0 = time.perf_counter()
                contenders[name](s, steps)
                s.sync()
                timed.append(time.perf_counter() - t0)
            got[name].append((timed[1] - timed[0]) / (s.long - s.short))
    return {name: statistics.median(v) for name, v in got.items()}


def _where(device: str) -> str:
    return torch.cuda.get_device_name(0) if device == "cuda" else "the CPU, 1 torch thread"


def run_resnet(device: str, rounds: int) -> None:
    s = Setup(device, "resnet")
    per = slopes(s, {"hand-written": hand_written, "PyTorchTrial": trialkit_trial}, rounds)
    ratio = per["PyTorchTrial"] / per["hand-written"]
    print(f"ResNet-18, batch {s.batch} at 224x224, fp16 autocast + GradScaler, on {_where(device)}; "
          f"slope of {s.short} -> {s.long} batches, median of {rounds} rounds")  # fmt: skip
    for name, sec in per.items():
        print(f"  {name:14} {sec * 1000:9.2f} ms/batch  {s.batch / sec:9.0f} images/s")
    verdict = "met" if ratio <= RESNET_GOAL else "NOT met"
    print(f"PyTorchTrial / hand-written: {ratio:.4f}x; goal <= {RESNET_GOAL:.2f}x: {verdict}")


def run_tiny(device: str, rounds: int) -> None:
    s = Setup(device, "tiny")
    contenders: dict[str, Contender] = {
        "hand-written": hand_written,
        "PyTorchTrial": trialkit_trial,
    }
    try:
        import lightning  # noqa: F401

        contenders["Lightning Trainer"] = lightning_trainer
    except ImportError:
        pass
    per = slopes(s, contenders, rounds)
    base = per["hand-written"]
    print(f"MLP 16-16-2, batch {s.batch}, on {_where(device)}; slope of {s.short} -> {s.long} "
          f"batches, median of {rounds} rounds")  # fmt: skip
    for name, sec in per.items():
        print(f"  {name:18} {sec * 1e6:8.1f} us/batch  own (net of hand-written) "
              f"{(sec - base) * 1e6:8.1f} us")  # fmt: skip
    own = (per["PyTorchTrial"] - base) * 1e6
    verdict = "met" if own <= TINY_GOAL_US else "NOT met"
    print(
        f"PyTorchTrial's own time per batch: {own:.1f} us; goal <= {TINY_GOAL_US:.0f} us: {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--part", choices=("resnet", "tiny", "both"), default=None,
                        help="default: both on cuda, tiny on cpu")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = (
            ""  # before CUDA starts: the harness takes a GPU it sees
        )
        torch.set_num_threads(1)
    elif not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here")
    else:
        torch.backends.cudnn.benchmark = True
    part = args.part or ("both" if args.device == "cuda" else "tiny")
    logging.disable(logging.WARNING)
    os.environ["TRIALKIT_HOME"] = tempfile.mkdtemp(prefix="trialkit-slope-")
    os.environ.pop("TRIALKIT_CLUSTER_INFO", None)
    if part in ("resnet", "both"):
        run_resnet(args.device, args.rounds)
    if part in ("tiny", "both"):
        run_tiny(args.device, args.rounds)


if __name__ == "__main__":
    main()
