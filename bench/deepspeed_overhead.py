"""Benchmark: per-step overhead of DeepSpeedTrial vs. a hand-written DeepSpeed engine loop,
same model, data, ds_config and seed, one rank on the CPU (DeepSpeed's CPU accelerator, gloo).

Goal (issue F6): overhead <= 2 % at ~5 ms steps.

Method: that of ``pytorch_overhead.py``, whose helpers it reuses. The MLP's width is calibrated
so a plain PyTorch step takes about 5 ms (one torch thread); every contender trains it through
``deepspeed.initialize`` with the same ds_config (torch Adam, ZeRO-0, micro batch 64, no
accumulation) from the same initial weights on the same unshuffled data. Each contender's data
loader ticks a lockstep partner before handing out each batch: the tick stamps the time, then
runs and times one step of a separate hand-written DeepSpeed engine loop (its own engine,
loader and copy of the data). The contender's time for a step is the gap between two ticks
minus the partner's step; the hand-written time is that step. The control is the hand-written
engine loop as the contender; the verdict divides DeepSpeedTrial's ratio by the control's.
Ratios with 95 % bootstrap intervals that resample rounds (one fresh process per contender per
round, order reversed every other round), then blocks of 25 steps within them. Final weights
are compared with the partner's. Timing is printed, not asserted.

Usage: ``DS_ACCELERATOR=cpu python bench/deepspeed_overhead.py [--rounds 6] [--batches 400]``
(needs deepspeed; about 3 minutes); ``--device cuda`` runs it on the GPU (NCCL, the engine there).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytorch_overhead as po
import torch
from _common import BenchmarkBroken, clean_env, lockstep_rounds, print_ratio_table
from pytorch_overhead import (
    BATCH,
    IN,
    OUT,
    WARMUP,
    Lockstep,
    TickingBatchSampler,
    calibrate,
    make_data,
    make_model,
    same_weights,
    to_device,
    torch_loader,
)
from torch import nn
from torch.utils.data import TensorDataset

GOAL_RATIO = 1.02
DS_CONFIG: dict[str, Any] = {
    "train_micro_batch_size_per_gpu": BATCH,
    "gradient_accumulation_steps": 1,
    "optimizer": {"type": "Adam", "params": {"lr": 0.001, "torch_adam": True}},
    "zero_optimization": {"stage": 0},
    "steps_per_print": 10**9,
}


def init_one_rank() -> None:
    """A one-rank process group (gloo; nccl on the GPU), as the hand-written loop would set up."""
    import deepspeed
    from trialkit.rendezvous import free_port

    for key, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"}.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    if not torch.distributed.is_initialized():
        backend = "nccl" if po.DEVICE == "cuda" else "gloo"
        deepspeed.init_distributed(dist_backend=backend, auto_mpi_discovery=False)


def engine(width: int) -> Any:
    import deepspeed

    model = make_model(width)
    eng, _, _, _ = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=DS_CONFIG
    )
    return eng


class HandWrittenEngine:
    """A hand-written DeepSpeed loop: forward, ``engine.backward``, ``engine.step`` per batch."""

    def __init__(
        self, width: int, data: TensorDataset, tick: Callable[[], None] | None = None
    ) -> None:
        self.engine = engine(width)
        self.loader = torch_loader(data, tick)
        self.it = iter(self.loader)
        self.engine.train()

    @property
    def model(self) -> nn.Module:
        return self.engine.module  # type: ignore[no-any-return]

    def step(self) -> None:
        try:
            x, y = next(self.it)
        except StopIteration:
            self.it = iter(self.loader)
            x, y = next(self.it)
        x, y = to_device(x, y)
        loss = nn.functional.cross_entropy(self.engine(x), y)
        self.engine.backward(loss)
        self.engine.step()


class EngineLockstep(Lockstep):
    """``pytorch_overhead.Lockstep`` with a hand-written DeepSpeed engine loop as the partner."""

    def __init__(self, width: int, data: TensorDataset) -> None:
        self.partner = HandWrittenEngine(width, TensorDataset(*(t.clone() for t in data.tensors)))  # type: ignore[assignment]
        self.stamps: list[float] = []
        self.partner_s: list[float] = []


# Contenders: each runs ``steps`` training steps on a loader that calls ``tick()`` -------------


def run_hand_written(width: int, data: TensorDataset, steps: int, tick: Lockstep) -> nn.Module:
    loop = HandWrittenEngine(width, data, tick)
    for _ in range(steps):
        loop.step()
    return loop.model


def run_trialkit(width: int, data: TensorDataset, steps: int, tick: Lockstep) -> nn.Module:
    from trialkit import deepspeed as tkds
    from trialkit import pytorch

    class Trial(tkds.DeepSpeedTrial):
        def __init__(self, context: tkds.DeepSpeedTrialContext) -> None:
            self.context = context
            self.engine = context.wrap_model_engine(engine(width))

        def build_training_data_loader(self) -> pytorch.DataLoader:
            return pytorch.DataLoader(data, batch_sampler=TickingBatchSampler(data, tick))

        def build_validation_data_loader(self) -> pytorch.DataLoader:
            return pytorch.DataLoader(
                TensorDataset(data.tensors[0][:BATCH], data.tensors[1][:BATCH]), batch_size=BATCH
            )

        def train_batch(self, dataloader_iter: Any, epoch_idx: int, batch_idx: int) -> Any:
            x, y = to_device(*next(dataloader_iter))
            loss = nn.functional.cross_entropy(self.engine(x), y)
            self.engine.backward(loss)
            self.engine.step()
            return {"loss": loss}

        def evaluate_batch(self, dataloader_iter: Any, batch_idx: int) -> dict[str, Any]:
            x, y = to_device(*next(dataloader_iter))
            return {"val_loss": nn.functional.cross_entropy(self.engine(x), y)}

    with tkds.init() as ctx:
        trial = Trial(ctx)
        tkds.Trainer(trial, ctx).fit(max_length=tkds.Batch(steps), checkpoint_policy="none")
    return trial.engine.module  # type: ignore[no-any-return]


CONTENDERS: dict[str, Callable[[int, TensorDataset, int, Lockstep], nn.Module]] = {
    "hand-written (control)": run_hand_written,
    "trialkit DeepSpeedTrial": run_trialkit,
}


def run_child(name: str, width: int, batches: int) -> None:
    """One round of one contender in this fresh process; its pairs as JSON on stdout."""
    torch.set_num_threads(1)
    logging.disable(logging.WARNING)
    init_one_rank()
    steps = WARMUP + batches + 1  # the gap after the last timed step ends at a real step
    data = make_data(steps)
    tick = EngineLockstep(width, data)
    model = CONTENDERS[name](width, data, steps, tick)
    bitwise, close = same_weights(tick.partner.model, model)
    print(json.dumps({"pairs": tick.pairs(batches), "bitwise": bitwise, "close": close}))


def run_round(name: str, width: int, batches: int, home: str) -> dict[str, Any]:
    env = clean_env(Path(home))
    env.setdefault("DS_ACCELERATOR", po.DEVICE)
    cmd = [sys.executable, __file__, "--child", name, "--width", str(width), "--device", po.DEVICE]
    proc = subprocess.run(
        [*cmd, "--batches", str(batches)], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise BenchmarkBroken(f"{name} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batches", type=int, default=400)
    parser.add_argument("--target-ms", type=float, default=5.0)
    parser.add_argument("--width", type=int, default=0, help="skip calibration; use this MLP width")
    parser.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    po.add_device_option(parser)
    args = parser.parse_args()
    po.use_device(args.device)
    if args.child:
        run_child(args.child, args.width, args.batches)
        return
    torch.set_num_threads(1)
    width = args.width or calibrate(args.target_ms)
    home = tempfile.mkdtemp(prefix="trialkit-bench-")
    started = time.monotonic()
    results = lockstep_rounds(
        CONTENDERS, args.rounds, lambda name: run_round(name, width, args.batches, home)
    )
    print(
        f"MLP {IN}-{width}-{width}-{OUT} under deepspeed.initialize (torch Adam, ZeRO-0), "
        f"micro batch {BATCH}, 1 rank on {po.device_words()}, 1 torch thread; {args.rounds} rounds x "
        f"{args.batches} timed steps (after {WARMUP} warm-up), each contender in its own "
        f"process, in lockstep with a hand-written engine step ({time.monotonic() - started:.0f} s)"
    )
    figures = print_ratio_table(results, "step")
    net, low, high = figures["trialkit DeepSpeedTrial"].net_of(figures["hand-written (control)"])
    verdict = "met" if net <= GOAL_RATIO else "NOT met"
    print(
        f"DeepSpeedTrial per-step overhead, net of the method's own (the control's): "
        f"{(net - 1) * 100:+.2f} % (95 % interval {(low - 1) * 100:+.2f} % to "
        f"{(high - 1) * 100:+.2f} %); goal <= {(GOAL_RATIO - 1) * 100:.0f} %: {verdict}"
    )


if __name__ == "__main__":
    try:
        main()
    except BenchmarkBroken as e:
        raise SystemExit(f"benchmark broken: {e}") from None
