"""The same LightningModule as a Trial class (``entrypoint: model_def:MNISTTrial``): trialkit
builds the Trainer with TrialkitCallback; the class says what to train on."""

import lightning.pytorch as pl
from train import MNISTModule, SyntheticMNIST

from trialkit.lightning import LightningTrial


class MNISTTrial(LightningTrial):
    def build_model(self) -> pl.LightningModule:
        hp = self.context.get_hparams()
        return MNISTModule(int(hp["hidden"]), float(hp["dropout"]), float(hp["learning_rate"]))

    def build_datamodule(self) -> pl.LightningDataModule:
        return SyntheticMNIST(int(self.context.get_hparam("batch_size")))

    def trainer_kwargs(self) -> dict:
        return {"accelerator": "cpu"}
