"""What an ASHA search's rungs hold, read from its saved state: per bracket, each rung's
length and the trials with a result there (their metric and whether the search promoted or
stopped them), and the trials training towards it. Read-only: the strategy is rebuilt from
the config, its state restored, and nothing is driven."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trialkit.config import SearcherConfig
from trialkit.searcher._adaptive import Tournament
from trialkit.searcher._asha_promotion import PromotionAsha
from trialkit.searcher._asha_stopping import StoppingAsha
from trialkit.searcher._factory import build_strategy, searcher_config
from trialkit.searcher._rung_state import BracketState
from trialkit.searcher._strategy import Strategy

ASHA_SEARCHERS = ("async_halving", "adaptive_asha")


def asha_rungs(
    searcher: SearcherConfig | Mapping[str, Any], method_state: Mapping[str, Any] | None
) -> list[BracketState] | None:
    """The brackets of an ASHA search from ``method_state`` (``DrivenMethod.save()``; None: not
    started: every rung empty). None when the searcher is not ASHA."""
    cfg = searcher_config(searcher)
    if cfg.name not in ASHA_SEARCHERS:
        return None
    strategy = build_strategy(cfg, {})
    if method_state is not None:
        strategy.restore(method_state["strategy"])
    brackets = strategy.brackets if isinstance(strategy, Tournament) else [strategy]
    return [_bracket(i, b) for i, b in enumerate(brackets)]


def _bracket(index: int, strategy: Strategy) -> BracketState:
    if not isinstance(strategy, StoppingAsha | PromotionAsha):
        raise TypeError(f"not an ASHA bracket: {type(strategy).__name__}")
    return BracketState(index, strategy.params.max_trials, strategy.rung_states())
