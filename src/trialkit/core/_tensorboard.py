"""TensorboardMode: who writes and uploads TensorBoard files."""

from __future__ import annotations

import enum


class TensorboardMode(enum.Enum):
    """AUTO: trialkit manages TensorBoard files; MANUAL: the user writes and uploads them."""

    AUTO = "AUTO"
    MANUAL = "MANUAL"
