"""MNIST as a PyTorchTrial, ported as the PyTorch porting tutorial does it: the model and
optimizer in __init__, the data loaders, train_batch and evaluate_batch, an LR scheduler."""

from __future__ import annotations

from typing import Any

import data
import torch
from torch import nn

from trialkit.pytorch import DataLoader, LRScheduler, PyTorchTrial, PyTorchTrialContext, TorchData


class Flatten(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.size(0), -1)


class MNistTrial(PyTorchTrial):
    def __init__(self, context: PyTorchTrialContext) -> None:
        self.context = context
        self.hparams = context.get_hparams()

        model = nn.Sequential(
            nn.Conv2d(1, self.hparams["n_filters1"], 3, 1),
            nn.ReLU(),
            nn.Conv2d(self.hparams["n_filters1"], self.hparams["n_filters2"], 3, 1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Dropout2d(self.hparams["dropout1"]),
            Flatten(),
            nn.Linear(144 * self.hparams["n_filters2"], 128),
            nn.ReLU(),
            nn.Dropout(self.hparams["dropout2"]),
            nn.Linear(128, 10),
        )
        self.model = self.context.wrap_model(model)

        optimizer = torch.optim.Adadelta(self.model.parameters(), lr=self.hparams["learning_rate"])
        self.optimizer = self.context.wrap_optimizer(optimizer)

        lr_sch = torch.optim.lr_scheduler.StepLR(self.optimizer, gamma=0.7, step_size=1)
        self.lr_sch = self.context.wrap_lr_scheduler(
            lr_sch, step_mode=LRScheduler.StepMode.STEP_EVERY_EPOCH
        )

        self.criterion = nn.CrossEntropyLoss()

    def build_training_data_loader(self) -> DataLoader:
        dataset = data.make_dataset(
            train=True, records=self.context.get_data_config().get("train_records")
        )
        return DataLoader(dataset, batch_size=self.context.get_per_slot_batch_size(), shuffle=True)

    def build_validation_data_loader(self) -> DataLoader:
        dataset = data.make_dataset(
            train=False, records=self.context.get_data_config().get("val_records")
        )
        return DataLoader(dataset, batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch: TorchData, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        images, target = batch
        output = self.model(images)
        loss = self.criterion(output, target)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        return {"loss": loss}

    def evaluate_batch(self, batch: TorchData) -> dict[str, Any]:
        images, target = batch
        output = self.model(images)
        validation_loss = self.criterion(output, target).item()
        pred = output.argmax(dim=1, keepdim=True)
        accuracy = pred.eq(target.view_as(pred)).sum().item() / len(images)
        return {"validation_loss": validation_loss, "accuracy": accuracy}
