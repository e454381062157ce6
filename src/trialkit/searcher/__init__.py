"""Search methods: single, random, grid, async_halving, adaptive_asha, custom and optuna.

Both of Determined's search contracts run through the same methods: with ``searcher.max_length``
set, the 0.37 generation (Create + ValidateAfter(target) + Close operations, promotion-based ASHA
unless ``stop_once``); without it, the 0.38 generation (Create only, every validation report read,
``Stop`` for trials that should not go on, stopping-based ASHA).

QUIRK decision (reference §7.1, InvalidHP): the methods implement Determined's *intended*
searcher-method logic. ``on_trial_exited_early(id, INVALID_HP | INIT_INVALID_HP)`` makes random
create a replacement when that trial closes (it does not use up ``max_trials``), leaves single and
grid without a replacement, and makes both ASHA variants Close/Stop the trial, count it invalid,
remove its results from rungs 0..its rung and create a replacement whatever the budget. Whether a
user-code InvalidHP reaches this event is the master's wiring; in Determined 0.37/0.38 it never
did (the trial looked like a plain exit), and trialkit's master should report it.

Other deliberate choices (each a no-op for event streams Determined's tests use):
* Budgets count Creates issued (Determined's stopping ASHA counted TrialCreated events).
* A 0.38 report from a trial already stopped, exited or closed is ignored (Determined would rank
  it again); an error/cancel of a trial the method already stopped changes no rung.
* 0.37: a completion must match the trial's outstanding ValidateAfter length (else SearcherError);
  two equal consecutive rung targets (e.g. L=4, d=4, R=3 → 1, 1, 4) are two distinct operations,
  not the "already completed" error Determined raised.
* A promotion-ASHA trial that errors while waiting (no op in flight) adds no result; if promoted
  later it fails the next rung with the worst result at once, as Determined intended.
* single/grid keep an InvalidHP trial in progress as a finished trial (it is not replaced);
  random drops it (its replacement takes its place). Progress is clamped to [0, 1].
* Nested hyperparameter groups are sampled in sorted-key order (Go used map order).
"""

from typing import TYPE_CHECKING

from trialkit.searcher._custom import (
    CustomMethod,
    EventQueueMethod,
    SearcherState,
    SearchMethod,
    check_operations,
    decode_operation,
    encode_operation,
)
from trialkit.searcher._factory import make_search_method
from trialkit.searcher._grid import grid_points
from trialkit.searcher._ops import (
    Close,
    Create,
    DrivenMethod,
    ExitedReason,
    Operation,
    SearcherError,
    Shutdown,
    Stop,
    ValidateAfter,
)
from trialkit.searcher._optuna import optuna_search_space
from trialkit.searcher._preview import preview
from trialkit.searcher._rng import RandomState
from trialkit.searcher._rung_state import BracketState, RungEntry, RungState
from trialkit.searcher._rung_view import asha_rungs
from trialkit.searcher._sampling import sample_hparams

if TYPE_CHECKING:  # loaded on first use: see __getattr__ below
    from trialkit.client._search_runner import LocalSearchRunner

__all__ = [
    "BracketState",
    "RungEntry",
    "RungState",
    "asha_rungs",
    "Close",
    "Create",
    "CustomMethod",
    "DrivenMethod",
    "EventQueueMethod",
    "ExitedReason",
    "Operation",
    "SearchMethod",
    "SearcherError",
    "SearcherState",
    "Shutdown",
    "Stop",
    "LocalSearchRunner",
    "ValidateAfter",
    "check_operations",
    "decode_operation",
    "encode_operation",
    "grid_points",
    "make_search_method",
    "optuna_search_space",
    "preview",
    "RandomState",
    "sample_hparams",
]


def __getattr__(name: str) -> object:
    # Determined's ``det.searcher.LocalSearchRunner``: it talks to a master, so it lives in
    # ``trialkit.client`` and is loaded only when asked for (the search methods stay pure).
    if name == "LocalSearchRunner":
        from trialkit.client._search_runner import LocalSearchRunner

        return LocalSearchRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
