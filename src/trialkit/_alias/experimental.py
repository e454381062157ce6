"""``determined.experimental`` under trialkit's alias: what has a trialkit equivalent.

Determined's Python SDK (``determined.experimental.client``) talks to a Determined cluster; in
trialkit the same jobs are done by the ``trialkit`` CLI and the functions named below.
"""

from __future__ import annotations

from typing import Any

_EQUIVALENTS = {
    "client": "the 'trialkit' CLI (trialkit checkpoint download UUID, trialkit experiment "
    "describe ID --json) and trialkit.pytorch.load_trial_from_checkpoint_path(path)",
    "Determined": "the 'trialkit' CLI (see determined.experimental.client)",
    "core_v2": "trialkit.core.init(), which runs both under the master and locally",
}


def __getattr__(name: str) -> Any:
    hint = _EQUIVALENTS.get(name)
    raise AttributeError(
        f"determined.experimental.{name} is not provided by trialkit"
        + (f"; use {hint}" if hint else "")
    )
