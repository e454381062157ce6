"""A PyTorchTrial written for Determined 0.37, unmodified: regression of y = w.x + b."""

import logging

import determined as det
import torch
from data import make_dataset
from determined import pytorch
from determined.pytorch import DataLoader, LRScheduler, PyTorchTrial, PyTorchTrialContext
from torch import nn
from torch.utils.data import SequentialSampler


class RegressionTrial(PyTorchTrial):
    def __init__(self, context: PyTorchTrialContext) -> None:
        self.context = context
        info = det.get_cluster_info()
        if info is not None:  # None when the trial is loaded from a checkpoint, off-cluster
            assert isinstance(info.trial, det.TrialInfo)
            trial = info.trial
            logging.info("trial %s of experiment %s", trial.trial_id, trial.experiment_id)
        if context.get_hparam("learning_rate") > 1.0:
            raise det.InvalidHP("learning_rate above 1.0 diverges")
        self.model = context.wrap_model(
            nn.Sequential(
                nn.Linear(4, context.get_hparam("hidden")),
                nn.ReLU(),
                nn.Linear(context.get_hparam("hidden"), 1),
            )
        )
        self.optimizer = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=context.get_hparam("learning_rate"))
        )
        self.scheduler = context.wrap_lr_scheduler(
            torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=1, gamma=0.9),
            step_mode=LRScheduler.StepMode.STEP_EVERY_EPOCH,
        )
        self.loss_fn = nn.MSELoss()

    def build_training_data_loader(self) -> DataLoader:
        data = make_dataset(self.context.get_data_config()["train_records"], seed=1)
        sampler = pytorch.samplers.ReproducibleShuffleSampler(
            SequentialSampler(data), seed=self.context.get_trial_seed()
        )
        return DataLoader(data, batch_size=self.context.get_per_slot_batch_size(), sampler=sampler)

    def build_validation_data_loader(self) -> DataLoader:
        data = make_dataset(self.context.get_data_config()["val_records"], seed=2)
        return DataLoader(data, batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch: pytorch.TorchData, epoch_idx: int, batch_idx: int):
        x, y = batch
        loss = self.loss_fn(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        return {"loss": loss, "lr": self.scheduler.get_last_lr()[0]}

    def evaluate_batch(self, batch: pytorch.TorchData):
        x, y = batch
        return {"validation_loss": self.loss_fn(self.model(x), y)}
