"""Lightning on trialkit: pass ``TrialkitCallback(core_context)`` to your ``pl.Trainer`` inside a
``core.init()`` script (``entrypoint: python3 train.py``) and call
``trainer.fit(model, ..., ckpt_path=callback.ckpt_path)``."""

from ._callback import TrialkitCallback

__all__ = ["TrialkitCallback"]
