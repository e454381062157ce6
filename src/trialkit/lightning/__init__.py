"""Lightning on trialkit. Either pass ``TrialkitCallback(core_context)`` to your ``pl.Trainer``
inside a ``core.init()`` script (``entrypoint: python3 train.py``) and call
``trainer.fit(model, ..., ckpt_path=callback.ckpt_path)``, or subclass ``LightningTrial``
(``entrypoint: model_def:MyTrial``) and let trialkit build the Trainer."""

from ._callback import TrialkitCallback
from ._trial import LightningTrial, LightningTrialContext

__all__ = ["LightningTrial", "LightningTrialContext", "TrialkitCallback"]
