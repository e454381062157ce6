"""Training metrics from tensors to Python values, many batches at once: on a GPU each
``.item()`` waits for the device, so the one-element tensors of a whole reporting period are
stacked and copied to the host together (one wait per device and dtype, not one per batch;
bench/README.md: metrics-to-host)."""

from __future__ import annotations

from typing import Any

import torch

from ..harness import scalar

_Slot = tuple[dict[str, Any], str]


def detached(metrics: dict[str, Any]) -> dict[str, Any]:
    """A batch's metrics with their tensors cut from the autograd graph (which is freed now),
    still on the device: copied to the host at the next report."""
    return {k: (v.detach() if isinstance(v, torch.Tensor) else v) for k, v in metrics.items()}


def metrics_to_python(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each batch's metrics with tensors (and numpy values) as numbers or lists: the same values
    ``.item()``/``.tolist()`` give, in the same dtype."""
    out = [dict(m) for m in batches]
    singles: dict[tuple[torch.device, torch.dtype], tuple[list[_Slot], list[torch.Tensor]]] = {}
    for m in out:
        for key, value in m.items():
            if not isinstance(value, torch.Tensor):
                m[key] = scalar(value)
            elif value.numel() == 1:
                slots, tensors = singles.setdefault((value.device, value.dtype), ([], []))
                slots.append((m, key))
                value = value.detach() if value.requires_grad else value
                tensors.append(value.reshape(()) if value.dim() else value)
            else:
                m[key] = value.detach().cpu().tolist()
    for slots, tensors in singles.values():
        for (m, key), number in zip(slots, torch.stack(tensors).tolist(), strict=True):
            m[key] = number
    return out
