"""Hugging Face Trainer under dsat: its command-line batch sizes must agree with the DeepSpeed
config the search gives each trial (Determined's ``get_hf_args_with_overwrites``)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..._merge import merged
from . import _defaults

logger = logging.getLogger("trialkit.dsat")

#: Hugging Face TrainingArguments flags and the DeepSpeed config keys they must equal.
HF_FLAG_TO_DS_KEY = {
    "--per_device_train_batch_size": "train_micro_batch_size_per_gpu",
    "--gradient_accumulation_steps": "gradient_accumulation_steps",
}


def _flag_value(args: list[str], flag: str) -> tuple[int, str] | None:
    """Where ``flag``'s value is (``--flag value`` or ``--flag=value``) and the value."""
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return i + 1, args[i + 1]
        if arg.startswith(flag + "="):
            return i, arg.split("=", 1)[1]
    return None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Held by one process at a time: every rank of a trial rewrites the same config file."""
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _set_flag(args: list[str], flag: str, value: str) -> None:
    found = _flag_value(args, flag)
    if found is None:
        logger.warning("dsat: adding %s %s to the Hugging Face arguments", flag, value)
        args.extend([flag, value])
        return
    i, old = found
    if old != value:
        logger.warning("dsat: changing %s from %s to %s (the DeepSpeed config)", flag, old, value)
        args[i] = value if args[i] == old else f"{flag}={value}"


def get_hf_args_with_overwrites(args: list[str], hparams: Mapping[str, Any]) -> list[str]:
    """``args`` (Hugging Face's command line) with its batch-size flags set from the trial's
    DeepSpeed config: the ``--deepspeed`` file, which is rewritten with the
    ``overwrite_deepspeed_args`` hyperparameter merged in (Hugging Face reads the file itself).
    An ``"auto"`` value is left to Hugging Face. Without that hyperparameter, ``args`` as given."""
    if _defaults.OVERWRITE_KEY not in hparams:
        logger.info(
            "dsat: no %s hyperparameter; Hugging Face arguments kept", _defaults.OVERWRITE_KEY
        )
        return list(args)
    found = _flag_value(list(args), "--deepspeed")
    if found is None:
        raise ValueError(
            "get_hf_args_with_overwrites: no --deepspeed <config file> in the arguments"
        )
    path = Path(found[1])
    out = list(args)
    with _locked(path):
        ds_config = merged(json.loads(path.read_text()), hparams[_defaults.OVERWRITE_KEY])
        path.write_text(json.dumps(ds_config, indent=2))
    for flag, key in HF_FLAG_TO_DS_KEY.items():
        value = ds_config.get(key)
        if value is None or (isinstance(value, str) and value.strip() == "auto"):
            continue
        _set_flag(out, flag, str(value))
    return out
