"""How a local-mode run is recorded in ``$TRIALKIT_HOME`` (kept apart from ``_local`` so that
describing one imports no store)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LocalRun:
    """How a local run is recorded (``core_v2``'s ``DefaultConfig``): name, description,
    labels, hyperparameters, ``data`` and the searcher block shown with it."""

    name: str | None = None
    description: str | None = None
    labels: tuple[str, ...] = ()
    hparams: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    searcher: dict[str, Any] = field(default_factory=dict)
