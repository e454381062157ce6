"""Benchmark: PyTorchTrial checkpoint save + load of a ~500 MB model vs. plain torch.save /
torch.load of the same state.

Goal (issue F4): within 1.3x of plain torch.save/torch.load.

The trialkit side is the harness's own code path: ``TrainLoop._checkpoint()`` (state dict in
Determined's layout, trial_state.pkl, load_data.json, code/, metadata.json, registration in the
local store) and ``TrainLoop._restore()`` (restore_path, torch.load, load_state_dict into the
model and optimizer, trial state). The baseline writes ``{"model": ..., "optimizer": ...}`` with
torch.save into a fresh directory on the same disk, then torch.load + load_state_dict. Rounds
alternate; the page cache is not dropped (same for both). Printed: median seconds and the ratio.

``--device cuda`` keeps the model (and so the optimizer's state) on the GPU, as a GPU trial's is:
both sides then copy it to the host to save and back to the GPU to load, and time up to
``torch.cuda.synchronize()``.

Usage: ``python bench/checkpoint_save_load.py [--mb 500] [--rounds 3] [--device cuda]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import TensorDataset

WIDTH = 4096


def make_model(mb: int) -> nn.Module:
    layers = max(1, round(mb * 2**20 / (WIDTH * WIDTH * 4)))
    return nn.Sequential(*[nn.Linear(WIDTH, WIDTH, bias=False) for _ in range(layers)])


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def plain(model: nn.Module, opt: torch.optim.Optimizer, root: Path) -> tuple[float, float]:
    d = Path(tempfile.mkdtemp(dir=root))
    t0 = time.perf_counter()
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, d / "ckpt.pth")
    t1 = time.perf_counter()
    state = torch.load(d / "ckpt.pth", map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    _sync()
    t2 = time.perf_counter()
    shutil.rmtree(d)
    return t1 - t0, t2 - t1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = (
            ""  # before CUDA starts: the harness takes a GPU it sees
        )
    elif not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here")
    logging.disable(logging.WARNING)
    root = Path(tempfile.mkdtemp(prefix="trialkit-ckpt-bench-"))
    os.environ["TRIALKIT_HOME"] = str(root / "home")
    os.environ.pop("TRIALKIT_CLUSTER_INFO", None)
    model_dir = root / "model"
    model_dir.mkdir()
    (model_dir / "model_def.py").write_text(
        "# the trial's code directory, copied into checkpoints\n"
    )

    from trialkit import pytorch
    from trialkit.harness import LoopSettings, TrainLoop
    from trialkit.pytorch._strategy import TorchStrategy

    class Big(pytorch.PyTorchTrial):
        def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
            self.context = context
            self.model = context.wrap_model(make_model(args.mb))
            self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))

        def build_training_data_loader(self) -> pytorch.DataLoader:
            return pytorch.DataLoader(TensorDataset(torch.zeros(2, WIDTH)), batch_size=1)

        def build_validation_data_loader(self) -> pytorch.DataLoader:
            return self.build_training_data_loader()

        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            return {}

        def evaluate_batch(self, batch: Any) -> dict[str, Any]:
            return {}

    Big.__module__ = "model_def"  # code/ comes from the model directory, as on a master
    import sys
    import types

    sys.modules["model_def"] = types.ModuleType("model_def")
    sys.modules["model_def"].__file__ = str(model_dir / "model_def.py")

    with pytorch.init() as ctx:
        trial = Big(ctx)
        size = sum(p.numel() * p.element_size() for p in trial.model.parameters()) / 2**20
        device = next(trial.model.parameters()).device
        assert device.type == args.device, device
        where = torch.cuda.get_device_name(device) if device.type == "cuda" else "the CPU"
        never = pytorch.Batch(10**9)
        settings = LoopSettings(
            validation_period=never, checkpoint_period=never, reporting_period=never
        )
        loop = TrainLoop(ctx._core, TorchStrategy(trial, ctx), settings)
        results: dict[str, list[tuple[float, float]]] = {"torch.save/load": [], "PyTorchTrial": []}
        for _ in range(args.rounds):
            results["torch.save/load"].append(plain(trial.model, trial.opt, root))
            t0 = time.perf_counter()
            loop._checkpoint()
            t1 = time.perf_counter()
            assert loop.last_checkpoint is not None
            loop._restore(loop.last_checkpoint)
            _sync()
            t2 = time.perf_counter()
            results["PyTorchTrial"].append((t1 - t0, t2 - t1))
            ctx._core.checkpoint.delete(loop.last_checkpoint)
    print(
        f"model: {size:.0f} MB of float32 weights on {where}, SGD optimizer; {args.rounds} rounds, "
        "medians"
    )
    print(f"{'':18} {'save s':>8} {'load s':>8} {'total s':>8} {'ratio':>7}")
    base = statistics.median(s + load for s, load in results["torch.save/load"])
    for name, rows in results.items():
        save = statistics.median(r[0] for r in rows)
        load = statistics.median(r[1] for r in rows)
        total = statistics.median(r[0] + r[1] for r in rows)
        print(f"{name:18} {save:8.3f} {load:8.3f} {total:8.3f} {total / base:7.3f}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
