"""Benchmark: per-batch time of a LightningModule under trialkit (``TrialkitCallback`` in a
``core.init()`` script, local mode) vs. the plain Lightning Trainer, same model, data and seed.

Goal (issue 18): <= 1.02x the plain Trainer.

Method: bench/pytorch_overhead.py's. Each contender trains in lockstep with a hand-written
PyTorch step (the batch sampler stamps the time and runs the partner step before each batch),
so both sides of every ratio are measured within the same ~10 ms on these shared cores. The
control is the hand-written loop as the contender (the method's own bias). The verdict is the
ratio of the two Lightning contenders' ratios, with a 95 % bootstrap interval (rounds, then
blocks of 25 batches). Each round runs every contender in a fresh process, in an order that
reverses every other round. Timing is printed, not asserted.

Usage: ``python bench/lightning_overhead.py [--rounds 6] [--batches 400] [--device cuda]`` (about
3 minutes).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pytorch_overhead as po  # noqa: E402
from _common import lockstep_rounds, print_ratio_table  # noqa: E402


def run_lightning_trialkit(
    width: int, data: TensorDataset, steps: int, tick: po.Lockstep
) -> nn.Module:
    from trialkit import core
    from trialkit.lightning import TrialkitCallback

    module = po.lightning_module(lambda: po.make_model(width), lambda: po.torch_loader(data, tick))
    with core.init() as core_context:
        callback = TrialkitCallback(core_context)  # reports every 100 batches
        trainer = po.bare_trainer(steps, po.DEVICE, callbacks=[callback])
        trainer.fit(module, ckpt_path=callback.ckpt_path)
    return module.model  # type: ignore[no-any-return]


po.CONTENDERS.clear()
po.CONTENDERS.update(
    {
        "hand-written (control)": po.run_hand_written,
        "Lightning Trainer": po.run_lightning,
        "Lightning + trialkit": run_lightning_trialkit,
    }
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batches", type=int, default=400)
    parser.add_argument("--target-ms", type=float, default=5.0)
    parser.add_argument("--width", type=int, default=0, help="skip calibration; use this MLP width")
    parser.add_argument("--child", choices=po.CONTENDERS, help=argparse.SUPPRESS)
    po.add_device_option(parser)
    args = parser.parse_args()
    po.use_device(args.device)
    if args.child:
        po.run_child(args.child, args.width, args.batches)
        return
    torch.set_num_threads(1)
    width = args.width or po.calibrate(args.target_ms)
    home = tempfile.mkdtemp(prefix="trialkit-bench-")
    po.__file__ = __file__  # rounds re-run this script as the child
    results = lockstep_rounds(
        po.CONTENDERS, args.rounds, lambda name: po.run_round(name, width, args.batches, home)
    )
    if not all(results.values()):
        raise SystemExit("lightning is not installed: pip install 'trialkit[lightning]'")
    print(
        f"MLP {po.IN}-{width}-{width}-{po.OUT}, batch {po.BATCH}, {po.device_words()}, 1 torch "
        f"thread; {args.rounds} "
        f"rounds x {args.batches} timed batches, in lockstep with a hand-written step"
    )
    figures = print_ratio_table(results, "batch", partner_column=None)
    net, low, high = figures["Lightning + trialkit"].net_of(figures["Lightning Trainer"])
    verdict = "met" if net <= po.GOAL_RATIO else "NOT met"
    print(
        f"TrialkitCallback per-batch time vs the plain Lightning Trainer: {net:.4f}x (95 % "
        f"interval {low:.4f}x to {high:.4f}x); goal <= {po.GOAL_RATIO:.2f}x: {verdict}"
    )


if __name__ == "__main__":
    logging.disable(logging.WARNING)
    main()
