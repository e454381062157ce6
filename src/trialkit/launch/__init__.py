"""Launchers that start one worker process per slot and tie their fates together.

``python3 -m trialkit.launch.torch_distributed [TORCHRUN_ARGS...] [--] SCRIPT...`` (torchrun),
``trialkit.launch.deepspeed``, ``trialkit.launch.horovod`` (horovodrun) and
``trialkit.launch.wrap_rank RANK SCRIPT...`` (prefixes each output line with ``[rank=N] ``).
Every launcher ends all workers within seconds when one fails, and exits non-zero.
"""
