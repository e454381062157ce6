"""Tiny PyTorchTrials for the harness tests (imported only once torch is present)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils.data import TensorDataset

from trialkit import pytorch

N_RECORDS = 48
FEATURES = 6


def dataset(seed: int = 0, n: int = N_RECORDS) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.randn(FEATURES, 1, generator=g)
    y = x @ w + 0.1 * torch.randn(n, 1, generator=g)
    return TensorDataset(x, y)


class RecordingCallback(pytorch.PyTorchCallback):
    """Counts hooks; its state travels in checkpoints."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.validations = 0

    def _hit(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def on_trial_startup(self, first_batch_idx: int, checkpoint_uuid: str | None) -> None:
        self._hit("on_trial_startup")

    def on_trial_shutdown(self) -> None:
        self._hit("on_trial_shutdown")

    def on_training_start(self) -> None:
        self._hit("on_training_start")

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        self._hit("on_training_epoch_start")

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        self._hit("on_training_epoch_end")

    def on_training_workload_end(
        self, avg_metrics: dict[str, Any], batch_metrics: list[Any]
    ) -> None:
        self._hit("on_training_workload_end")

    def on_validation_start(self) -> None:
        self._hit("on_validation_start")

    def on_validation_epoch_start(self) -> None:
        self._hit("on_validation_epoch_start")

    def on_validation_epoch_end(self, outputs: list[Any]) -> None:
        self._hit("on_validation_epoch_end")

    def on_validation_end(self, metrics: dict[str, Any]) -> None:
        self._hit("on_validation_end")
        self.validations += 1

    def on_checkpoint_save_start(self, checkpoint: dict[str, Any]) -> None:
        self._hit("on_checkpoint_save_start")

    def on_checkpoint_load_start(self, checkpoint: dict[str, Any]) -> None:
        self._hit("on_checkpoint_load_start")

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        self._hit("on_checkpoint_write_end")

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        self._hit("on_checkpoint_upload_end")

    def state_dict(self) -> dict[str, Any]:
        return {"validations": self.validations}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.validations = state["validations"]


class RegressionTrial(pytorch.PyTorchTrial):
    """A linear+dropout regression: shuffling, dropout, aggregation and an LR schedule all matter."""

    def __init__(self, context: pytorch.PyTorchTrialContext, stop_at: int | None = None) -> None:
        self.context = context
        hp = context.get_hparams()
        self.stop_at = stop_at
        model = nn.Sequential(
            nn.Linear(FEATURES, 16), nn.ReLU(), nn.Dropout(hp.get("dropout", 0.2)), nn.Linear(16, 1)
        )
        self.model = context.wrap_model(model)
        self.opt = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=hp.get("lr", 0.05), momentum=0.9)
        )
        mode = hp.get("lr_mode")
        if mode is not None:
            sched = torch.optim.lr_scheduler.StepLR(self.opt, step_size=1, gamma=0.9)
            context.wrap_lr_scheduler(
                sched, pytorch.LRScheduler.StepMode[mode], frequency=hp.get("lr_freq", 1)
            )
        self.callback = RecordingCallback()

    def build_callbacks(self) -> dict[str, pytorch.PyTorchCallback]:
        return {"recorder": self.callback}

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            dataset(0), batch_size=self.context.get_per_slot_batch_size(), shuffle=True
        )

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(dataset(1, 20), batch_size=8)

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        if self.stop_at is not None and batch_idx + 1 == self.stop_at:
            self.context.set_stop_requested(True)
        return {"loss": loss, "lr": self.opt.param_groups[0]["lr"]}

    def evaluate_batch(self, batch: Any) -> dict[str, Any]:
        x, y = batch
        return {"val_loss": nn.functional.mse_loss(self.model(x), y)}


def weights(trial: pytorch.PyTorchTrial) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trial.context.models[0].parameters()]  # type: ignore[attr-defined]
