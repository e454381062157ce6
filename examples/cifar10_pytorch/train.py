"""Train CIFARTrial with the Trainer API, no master: ``python3 train.py``."""

from __future__ import annotations

import logging

import yaml
from model_def import CIFARTrial

import trialkit
from trialkit import pytorch

logging.basicConfig(level=logging.INFO, format=trialkit.LOG_FORMAT)
with open("const.yaml") as f:
    conf = yaml.safe_load(f)
with pytorch.init(hparams=conf["hyperparameters"], exp_conf=conf, seed=1) as context:
    trial = CIFARTrial(context)
    trainer = pytorch.Trainer(trial, context)
    trainer.fit(
        max_length=pytorch.Epoch(1), validation_period=pytorch.Epoch(1), checkpoint_policy="all"
    )
print("validation:", trainer.loop.last_validation if trainer.loop else None)
