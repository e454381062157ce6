"""Seed 002's draft "Generic API", kept as thin aliases of the Core API.

``context = trialkit.generic.init()`` (or ``det.generic.init()`` through the alias) gives
``context.training`` (metrics, ``trial_seed``, ``hparams``, ``basic_search()``),
``context.checkpoint.save_path()``, ``context.latest_checkpoint`` and
``context.should_preempt()``. Each is one Core API call; ``context.core`` is the Core context.
New code should use ``trialkit.core`` directly.
"""

from ._context import BasicSearchOp, CheckpointSaver, GenericContext, Training, init

__all__ = ["BasicSearchOp", "CheckpointSaver", "GenericContext", "Training", "init"]
