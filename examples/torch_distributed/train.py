"""A PyTorch DDP training script ported to the Core API the way seed 000 ports timm's train.py:
launched by trialkit.launch.torch_distributed, it reports metrics, checkpoints (resuming from
the latest one), honours preemption, reads hyperparameters and follows searcher operations.

Runs on CPU with the gloo backend (NCCL when GPUs are visible). Needs torch.
"""

import argparse
import contextlib
import logging
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import trialkit as det
from trialkit import core

logger = logging.getLogger("train")


def make_data(seed: int, n: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    """y = 3x - 2 + noise, the same on every rank (each rank then takes its own shard)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, generator=g)
    return x, 3 * x - 2 + 0.1 * torch.randn(n, 1, generator=g)


def train_one_epoch(model, opt, x, y, rank, size, batch_size):
    """One pass over this rank's shard; returns the loss averaged over all ranks."""
    xs, ys = x[rank::size], y[rank::size]
    total = torch.zeros(2)
    for i in range(0, len(xs), batch_size):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xs[i : i + batch_size]), ys[i : i + batch_size])
        loss.backward()  # DDP averages the gradients across ranks here
        opt.step()
        total += torch.tensor([loss.item(), 1.0])
    dist.all_reduce(total)
    return {"loss": (total[0] / total[1]).item()}


def validate(model, x, y):
    with torch.no_grad():
        val = torch.nn.functional.mse_loss(model(x), y)
    dist.all_reduce(val)
    return {"loss": val.item() / dist.get_world_size()}


def main(core_context: core.Context, args: argparse.Namespace) -> None:
    rank, size = dist.get_rank(), dist.get_world_size()
    info = det.get_cluster_info()
    # If running in local mode, cluster info will be None.
    if info is not None:
        latest_checkpoint = info.latest_checkpoint
        trial_id = info.trial.trial_id
    else:
        latest_checkpoint = None
        trial_id = -1
    logger.info(
        f"Training in distributed mode with multiple processes, CPU per process. "
        f"Process {rank}, total {size}."
    )

    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    x, y = make_data(seed=1)
    vx, vy = make_data(seed=2, n=128)
    epoch_length = (len(x) // size + args.batch_size - 1) // args.batch_size

    start_epoch = 0
    if latest_checkpoint is not None:
        restore_path_context = core_context.checkpoint.restore_path(latest_checkpoint)
    else:
        restore_path_context = contextlib.nullcontext()
    with restore_path_context as restore_path:
        checkpoint_path = restore_path.joinpath("data") if restore_path is not None else args.resume
        if checkpoint_path:
            state = torch.load(checkpoint_path)
            model.module.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            start_epoch = state["epoch"] + 1
            metadata = core_context.checkpoint.get_metadata(latest_checkpoint)
            if metadata["trial_id"] != trial_id:
                start_epoch = 0  # warm start from another trial's weights: train from epoch 0

    next_epoch = start_epoch
    for op in core_context.searcher.operations():
        for epoch in range(next_epoch, op.length):
            train_metrics = train_one_epoch(model, opt, x, y, rank, size, args.batch_size)
            eval_metrics = validate(model, vx, vy)
            latest_batch = epoch_length * (epoch + 1)
            # Metrics can only be reported on rank 0, to avoid duplicate reports.
            if rank == 0:
                core_context.train.report_training_metrics(
                    latest_batch=latest_batch, metrics=train_metrics
                )
                core_context.train.report_validation_metrics(
                    latest_batch=latest_batch,
                    metrics={"val_" + k: v for k, v in eval_metrics.items()},
                )
                op.report_progress(epoch + 1)
                save_path = os.path.join(args.output, "last.pth")
                torch.save(
                    {"model": model.module.state_dict(), "opt": opt.state_dict(), "epoch": epoch},
                    save_path,
                )
                checkpoint_metadata = {"latest_batch": latest_batch, "trial_id": trial_id}
                with core_context.checkpoint.store_path(checkpoint_metadata) as (path, _):
                    shutil.copy2(save_path, path.joinpath("data"))
                logger.info(
                    f"epoch {epoch}: loss {train_metrics['loss']:.4f} "
                    f"val_loss {eval_metrics['loss']:.4f}"
                )
            if core_context.preempt.should_preempt():
                # Exit; when unpaused, the trial restarts from the latest checkpoint.
                return
        next_epoch = op.length
        if rank == 0:
            op.report_completed(eval_metrics["loss"])


def parse_args(namespace=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--resume", default="")
    parser.add_argument("--output", default=tempfile.gettempdir())
    return parser.parse_args(namespace=namespace)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend, init_method="env://")
    info = det.get_cluster_info()
    hparams = argparse.Namespace(**(info.trial.hparams if info is not None else {}))
    args = parse_args(hparams)  # command-line arguments win over hyperparameters
    args.output = tempfile.mkdtemp(prefix=f"rank{dist.get_rank()}-")
    distributed = core.DistributedContext.from_torch_distributed()
    with core.init(distributed=distributed) as core_context:
        main(core_context, args)
    dist.destroy_process_group()
