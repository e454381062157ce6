"""Launchers that start one worker process per slot and tie their fates together.

``python3 -m trialkit.launch.torch_distributed [TORCHRUN_ARGS...] [--] SCRIPT...`` (torchrun),
``trialkit.launch.tensorflow`` (one worker per slot, each with its ``TF_CONFIG``),
``trialkit.launch.deepspeed``, ``trialkit.launch.horovod`` (horovodrun) and
``trialkit.launch.wrap_rank RANK SCRIPT...`` (prefixes each output line with ``[rank=N] || ``).
``trialkit.launch.auto --trial module:Class`` picks the launcher by the Trial's harness.
Every launcher ends all workers within seconds when one fails, and exits non-zero.
"""
