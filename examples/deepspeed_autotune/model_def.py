"""The same model as a DeepSpeedTrial: under dsat it needs no dsat-specific code beyond building
its engine from ``dsat.get_ds_config_from_hparams`` (the harness reports the autotuning
results)."""

from __future__ import annotations

from typing import Any

import torch
from script import FEATURES, make_data

import deepspeed
from trialkit import pytorch
from trialkit.deepspeed import DeepSpeedTrial, DeepSpeedTrialContext
from trialkit.pytorch import dsat


class AutotuneTrial(DeepSpeedTrial):
    def __init__(self, context: DeepSpeedTrialContext) -> None:
        self.context = context
        hidden = int(context.get_hparams()["hidden"])
        model = torch.nn.Sequential(
            torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)
        )
        engine, _, _, _ = deepspeed.initialize(
            model=model,
            model_parameters=model.parameters(),
            config=dsat.get_ds_config_from_hparams(context.get_hparams()),
        )
        self.model = context.wrap_model_engine(engine)

    def build_training_data_loader(self) -> pytorch.DataLoader:
        batch = self.context.get_train_micro_batch_size_per_gpu()
        return pytorch.DataLoader(make_data(), batch_size=batch, shuffle=True)

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        batch = self.context.get_train_micro_batch_size_per_gpu()
        return pytorch.DataLoader(make_data(128), batch_size=batch)

    def train_batch(self, dataloader_iter: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y = self.context.to_device(next(dataloader_iter))
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        self.model.backward(loss)
        self.model.step()
        return {"loss": loss}

    def evaluate_batch(self, dataloader_iter: Any, batch_idx: int) -> dict[str, Any]:
        x, y = self.context.to_device(next(dataloader_iter))
        return {"val_loss": torch.nn.functional.mse_loss(self.model(x), y)}
