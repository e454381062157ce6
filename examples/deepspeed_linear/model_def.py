"""A DeepSpeedTrial that fits a noisy linear function with a small MLP on generated data: one
DeepSpeed engine, ZeRO stage 1, a warm-up LR scheduler, on the CPU or GPUs."""

from __future__ import annotations

from typing import Any

import torch

import deepspeed
from trialkit import pytorch
from trialkit.deepspeed import DeepSpeedTrial, DeepSpeedTrialContext, overwrite_deepspeed_config

FEATURES = 8


class LinearData(torch.utils.data.Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """``n`` points of y = x·w + b + noise, the same for a given ``seed`` on every rank."""

    def __init__(self, n: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        w = torch.linspace(-2.0, 2.0, FEATURES).unsqueeze(1)
        self.x = torch.randn(n, FEATURES, generator=g)
        self.y = self.x @ w + 0.5 + 0.05 * torch.randn(n, 1, generator=g)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[i], self.y[i]


class LinearTrial(DeepSpeedTrial):
    def __init__(self, context: DeepSpeedTrialContext) -> None:
        self.context = context
        hparams = context.get_hparams()
        data = context.get_data_config()
        self.train_records = int(data.get("train_records", 1024))
        self.val_records = int(data.get("val_records", 256))
        hidden = int(hparams["hidden"])
        model = torch.nn.Sequential(
            torch.nn.Linear(FEATURES, hidden),
            torch.nn.ReLU(),
            torch.nn.Dropout(float(hparams["dropout"])),
            torch.nn.Linear(hidden, 1),
        )
        ds_config = overwrite_deepspeed_config(
            hparams["deepspeed_config"], hparams.get("overwrite_deepspeed_args", {})
        )
        engine, _, _, _ = deepspeed.initialize(
            model=model, model_parameters=model.parameters(), config=ds_config
        )
        self.model = context.wrap_model_engine(engine)

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            LinearData(self.train_records, seed=0),
            batch_size=self.context.get_train_micro_batch_size_per_gpu(),
            shuffle=True,
        )

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            LinearData(self.val_records, seed=1),
            batch_size=self.context.get_train_micro_batch_size_per_gpu(),
        )

    def train_batch(self, dataloader_iter: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y = self.context.to_device(next(dataloader_iter))
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        self.model.backward(loss)
        self.model.step()
        return {"loss": loss, "lr": self.model.get_lr()[0]}

    def evaluate_batch(self, dataloader_iter: Any, batch_idx: int) -> dict[str, Any]:
        x, y = self.context.to_device(next(dataloader_iter))
        pred = self.model(x)
        return {
            "val_loss": torch.nn.functional.mse_loss(pred, y),
            "val_mae": (pred - y).abs().mean(),
        }
