"""Capture and restore the python, numpy and torch RNG states (Determined's key names)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch


def capture_rng(device: torch.device | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {
        "cpu_rng_state": torch.random.get_rng_state(),
        "np_rng_state": np.random.get_state(),
        "random_rng_state": random.getstate(),
    }
    if device is not None and device.type == "cuda":
        state["gpu_rng_state"] = torch.cuda.get_rng_state(device)
    return state


def restore_rng(state: dict[str, Any], device: torch.device | None = None) -> None:
    """Restore every saved generator; a missing or unusable state is an error, not a warning."""
    missing = [k for k in ("cpu_rng_state", "np_rng_state", "random_rng_state") if k not in state]
    if missing:
        raise RuntimeError(
            f"checkpoint rng_state lacks {', '.join(missing)}: cannot resume exactly"
        )
    torch.random.set_rng_state(state["cpu_rng_state"])
    np.random.set_state(state["np_rng_state"])
    random.setstate(state["random_rng_state"])
    if device is not None and device.type == "cuda" and "gpu_rng_state" in state:
        torch.cuda.set_rng_state(state["gpu_rng_state"], device)


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.random.manual_seed(seed)
