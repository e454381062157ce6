"""DeepSpeedTrials the tests run: a linear regression (one engine, any ZeRO stage) and a tiny
GAN (two engines). Data is generated; settings come from the hyperparameters."""

from __future__ import annotations

from typing import Any

import torch

import deepspeed
from trialkit import deepspeed as tkds
from trialkit import pytorch


class _Points(torch.utils.data.Dataset[Any]):
    def __init__(self, n: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 4, generator=g)
        self.y = self.x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[i], self.y[i]


def ds_config(hparams: dict[str, Any]) -> dict[str, Any]:
    return tkds.overwrite_deepspeed_config(
        {
            "train_micro_batch_size_per_gpu": 4,
            "gradient_accumulation_steps": 1,
            "optimizer": {"type": "Adam", "params": {"lr": 0.05, "torch_adam": True}},
            "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 5}},
            "zero_optimization": {"stage": 0},
            "steps_per_print": 10**9,
        },
        hparams.get("ds", {}),
    )


class LinearTrial(tkds.DeepSpeedTrial):
    """y = x·w + b with dropout (the RNG state matters) and a shuffled loader."""

    def __init__(self, context: tkds.DeepSpeedTrialContext) -> None:
        self.context = context
        hp = context.get_hparams()
        model = torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.Dropout(0.1), torch.nn.Linear(8, 1)
        )
        engine, _, _, _ = deepspeed.initialize(
            model=model, model_parameters=model.parameters(), config=ds_config(hp)
        )
        self.engine = context.wrap_model_engine(engine)
        self.stop_at = hp.get("stop_at")

    def build_training_data_loader(self) -> Any:
        micro = self.context.get_train_micro_batch_size_per_gpu()
        return pytorch.DataLoader(_Points(96, 0), batch_size=micro, shuffle=True)

    def build_validation_data_loader(self) -> Any:
        return pytorch.DataLoader(_Points(32, 1), batch_size=8)

    def train_batch(self, dataloader_iter: Any, epoch_idx: int, batch_idx: int) -> Any:
        x, y = self.context.to_device(next(dataloader_iter))
        loss = torch.nn.functional.mse_loss(self.engine(x), y)
        self.engine.backward(loss)
        self.engine.step()
        if self.stop_at is not None and batch_idx + 1 == self.stop_at:
            self.context.set_stop_requested(True)
        return {"loss": loss, "epoch": epoch_idx, "batch": batch_idx}

    def evaluate_batch(self, dataloader_iter: Any, batch_idx: int) -> dict[str, Any]:
        x, y = self.context.to_device(next(dataloader_iter))
        return {"val_loss": torch.nn.functional.mse_loss(self.engine(x), y)}
