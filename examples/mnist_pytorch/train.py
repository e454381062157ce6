"""Train MNistTrial with the Trainer API and no master: ``python train.py``.

Metrics and checkpoints go to the local trialkit home; the last checkpoint is loaded back
for inference at the end.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch
import yaml
from model_def import MNistTrial

import trialkit
from trialkit import pytorch


def main() -> None:
    logging.basicConfig(level=logging.INFO, format=trialkit.LOG_FORMAT)
    with open("const.yaml") as f:
        conf = yaml.safe_load(f)
    with pytorch.init(hparams=conf["hyperparameters"], exp_conf=conf, seed=42) as context:
        trial = MNistTrial(context)
        trainer = pytorch.Trainer(trial, context)
        trainer.fit(
            max_length=pytorch.Epoch(1),
            validation_period=pytorch.Batch(25),
            checkpoint_period=pytorch.Batch(50),
            checkpoint_policy="all",
        )
    assert trainer.loop is not None
    print("validation:", trainer.loop.last_validation)
    # Local checkpoints live under $TRIALKIT_HOME/checkpoints/<uuid> (default ~/.trialkit).
    home = Path(os.environ.get("TRIALKIT_HOME") or "~/.trialkit").expanduser()
    path = home / "checkpoints" / str(trainer.loop.last_checkpoint)
    print("checkpoint:", path, sorted(p.name for p in path.iterdir()))
    restored = pytorch.load_trial_from_checkpoint_path(path)
    images, _ = next(iter(restored.build_validation_data_loader()))
    restored.model.eval()
    with torch.no_grad():
        print("predictions:", restored.model(images[:8]).argmax(dim=1).tolist())


if __name__ == "__main__":
    main()
