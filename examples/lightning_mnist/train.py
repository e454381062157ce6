"""A LightningModule on trialkit: TrialkitCallback reports what ``self.log`` logs, checkpoints
through the trial's storage, resumes exactly after a pause, stops when preempted and trains to
the searcher's length. Runs under the master (``entrypoint: python3 train.py``; with
``slots_per_trial: 2`` under ``python3 -m trialkit.launch.torch_distributed``) or on its own
(``python train.py``: local mode). The data is synthetic and MNIST-shaped."""

import logging

import lightning.pytorch as pl
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import trialkit
from trialkit import core
from trialkit.lightning import TrialkitCallback

DEFAULTS = {"learning_rate": 0.05, "hidden": 32, "dropout": 0.2, "batch_size": 32, "epochs": 2}


def synthetic_mnist(seed: int, rows: int) -> TensorDataset:
    """28x28 images whose class is the brightest of ten horizontal bands, plus noise."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (rows,), generator=g)
    images = torch.rand(rows, 1, 28, 28, generator=g) * 0.5
    for i, label in enumerate(labels.tolist()):
        images[i, 0, 2 * label : 2 * label + 3, :] += 0.5
    return TensorDataset(images, labels)


class MNISTModule(pl.LightningModule):
    def __init__(self, hidden: int, dropout: float, learning_rate: float) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, 10),
        )

    def training_step(
        self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int
    ) -> torch.Tensor:
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("loss", loss)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        x, y = batch
        logits = self.net(x)
        self.log("val_loss", F.cross_entropy(logits, y), sync_dist=True)
        self.log("val_accuracy", (logits.argmax(1) == y).float().mean(), sync_dist=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.learning_rate, momentum=0.9)


class SyntheticMNIST(pl.LightningDataModule):
    def __init__(self, batch_size: int) -> None:
        super().__init__()
        self.batch_size = batch_size

    def train_dataloader(self) -> DataLoader:
        return DataLoader(synthetic_mnist(0, 640), batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(synthetic_mnist(1, 256), batch_size=128)


def main() -> None:
    info = trialkit.get_cluster_info()
    hparams = {**DEFAULTS, **(info.trial.hparams if info is not None else {})}
    pl.seed_everything(info.trial.trial_seed if info is not None else 0, verbose=False)
    with core.init() as core_context:
        callback = TrialkitCallback(core_context, train_metrics_report_period=5)
        dist = core_context.distributed
        trainer = pl.Trainer(
            accelerator="cpu",
            devices=dist.local_size,
            num_nodes=dist.size // dist.local_size,
            strategy="ddp" if dist.size > 1 else "auto",
            max_epochs=int(hparams["epochs"]),  # local mode; under the master the searcher decides
            callbacks=[callback],
            logger=False,
            enable_checkpointing=False,  # trialkit stores the checkpoints
            enable_progress_bar=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
        )
        model = MNISTModule(
            int(hparams["hidden"]), float(hparams["dropout"]), float(hparams["learning_rate"])
        )
        trainer.fit(
            model,
            datamodule=SyntheticMNIST(int(hparams["batch_size"])),
            ckpt_path=callback.ckpt_path,
        )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=trialkit.LOG_FORMAT)
    main()
