"""CIFAR-10 as a PyTorchTrial, ported the way the PyTorch porting tutorial (seed 004) does it:
model, optimizer and loss in ``__init__``, the data loaders, ``train_batch``,
``evaluate_batch``, and an LR scheduler stepped every epoch. The data comes from a local
directory in CIFAR-10's python format (``hyperparameters.data``), read by cifar10_data.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from cifar10_data import load_split
from torch import nn
from torch.utils.data import TensorDataset

from trialkit.pytorch import DataLoader, LRScheduler, PyTorchTrial, PyTorchTrialContext, TorchData


def to_dataset(data_dir: str, train: bool) -> TensorDataset:
    """Images as float tensors N x 3 x 32 x 32 scaled to [-1, 1], labels as int64."""
    images, labels = load_split(Path(data_dir), train=train)
    x = torch.from_numpy(images).permute(0, 3, 1, 2).float().div(255).sub(0.5).div(0.5)
    return TensorDataset(x, torch.from_numpy(labels))


def accuracy(output: torch.Tensor, target: torch.Tensor) -> float:
    return (output.argmax(dim=1) == target).float().mean().item()


class CIFARTrial(PyTorchTrial):
    def __init__(self, context: PyTorchTrialContext) -> None:
        self.context = context
        self.hparams = context.get_hparams()

        model = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(32 * 8 * 8, 10),
        )
        self.model = self.context.wrap_model(model)

        optimizer = torch.optim.SGD(
            self.model.parameters(),
            lr=self.hparams["lr"],
            momentum=self.hparams["momentum"],
            weight_decay=self.hparams["weight_decay"],
        )
        self.optimizer = self.context.wrap_optimizer(optimizer)

        lr_sch = torch.optim.lr_scheduler.StepLR(self.optimizer, gamma=0.1, step_size=2)
        self.lr_sch = self.context.wrap_lr_scheduler(
            lr_sch, step_mode=LRScheduler.StepMode.STEP_EVERY_EPOCH
        )
        self.criterion = nn.CrossEntropyLoss()

    def build_training_data_loader(self) -> DataLoader:
        dataset = to_dataset(self.hparams["data"], train=True)
        return DataLoader(dataset, batch_size=self.context.get_per_slot_batch_size(), shuffle=True)

    def build_validation_data_loader(self) -> DataLoader:
        dataset = to_dataset(self.hparams["data"], train=False)
        return DataLoader(dataset, batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch: TorchData, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        images, target = batch
        output = self.model(images)
        loss = self.criterion(output, target)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        return {"loss": loss.item(), "top1": accuracy(output, target)}

    def evaluate_batch(self, batch: TorchData) -> dict[str, Any]:
        images, target = batch
        output = self.model(images)
        return {"val_loss": self.criterion(output, target).item(), "top1": accuracy(output, target)}
