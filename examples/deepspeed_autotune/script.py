"""A Core API script for DeepSpeed Autotune: a small MLP on generated points, its engine built
from the trial's DeepSpeed config (``dsat.get_ds_config_from_hparams``), each step wrapped in
``dsat.dsat_reporting_context`` so the autotuning profile's results reach the search."""

from __future__ import annotations

import logging

import torch

import deepspeed
import trialkit as det
from trialkit import core
from trialkit.pytorch import dsat

FEATURES = 16


def make_data(n: int = 512) -> torch.utils.data.TensorDataset:
    """``n`` points of y = x·w + noise (the same on every run)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, FEATURES, generator=g)
    y = x @ torch.linspace(-1.0, 1.0, FEATURES).unsqueeze(1) + 0.05 * torch.randn(n, 1, generator=g)
    return torch.utils.data.TensorDataset(x, y)


def main(core_context: core.Context, hparams: dict) -> None:
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, hparams["hidden"]),
        torch.nn.ReLU(),
        torch.nn.Linear(hparams["hidden"], 1),
    )
    engine, _, train_loader, _ = deepspeed.initialize(
        model=model,
        model_parameters=model.parameters(),
        training_data=make_data(),
        config=dsat.get_ds_config_from_hparams(hparams),
    )
    steps_completed = 0
    for op in core_context.searcher.operations():
        while steps_completed < op.length:
            for x, y in train_loader:
                with dsat.dsat_reporting_context(core_context, op):
                    loss = torch.nn.functional.mse_loss(engine(x), y)
                    engine.backward(loss)
                    engine.step()
                steps_completed += 1
                if steps_completed >= op.length:
                    break
        core_context.train.report_validation_metrics(
            steps_completed=steps_completed, metrics={"loss": loss.item()}
        )
        op.report_completed(loss.item())


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    info = det.get_cluster_info()
    assert info is not None, "run this under dsat: python3 -m trialkit.pytorch.dsat ..."
    distributed = core.DistributedContext.from_deepspeed()
    with core.init(distributed=distributed) as core_context:
        main(core_context, info.trial.hparams)
