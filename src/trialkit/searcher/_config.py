"""The searcher section, read into one typed value; problems are collected and raised together."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trialkit.searcher._strategy import Generation

SEARCHERS = ("single", "random", "grid", "async_halving", "adaptive_asha")
MODES = ("aggressive", "standard", "conservative")
LENGTH_UNITS = ("batches", "records", "epochs")
ASHA_SEARCHERS = ("async_halving", "adaptive_asha")


@dataclass(frozen=True)
class SearcherSettings:
    """The searcher fields the search methods use (defaults as in Determined)."""

    name: str
    metric: str = "validation_loss"
    smaller_is_better: bool = True
    length: int | None = None  # the number in max_length (0.37 generation when set)
    max_trials: int = 1
    max_concurrent_trials: int = 16
    time_metric: str | None = None
    max_time: int | None = None
    mode: str = "standard"
    divisor: float = 4.0
    max_rungs: int = 5
    bracket_rungs: tuple[int, ...] = ()
    num_rungs: int | None = None
    stop_once: bool = False

    @property
    def generation(self) -> Generation:
        """0.37 (operations) when max_length is set, else 0.38 (reports)."""
        return Generation.REPORTS if self.length is None else Generation.OPS

    @property
    def max_units(self) -> int:
        """The ASHA top-rung length: max_length (0.37) or max_time (0.38)."""
        value = self.length if self.length is not None else self.max_time
        assert value is not None
        return value


def generation_of(searcher: Mapping[str, Any]) -> str:
    """ "0.37" (operations: max_length, and always for custom searchers) or "0.38" (reports)."""
    custom = searcher.get("name") == "custom"
    return "0.37" if custom or searcher.get("max_length") is not None else "0.38"


def parse_settings(searcher: Mapping[str, Any]) -> SearcherSettings:
    """Read a fully-defaulted searcher section; raise ValueError listing every problem."""
    errors: list[str] = []
    name = searcher.get("name")
    if name not in SEARCHERS:
        raise ValueError(f"searcher.name: got {name!r}; expected one of {', '.join(SEARCHERS)}")
    length = _parse_length(searcher.get("max_length"), errors)
    settings = SearcherSettings(
        name=name,
        metric=str(searcher.get("metric") or "validation_loss"),
        smaller_is_better=bool(searcher.get("smaller_is_better", True)),
        length=length,
        max_trials=_int(searcher, "max_trials", 1, errors, minimum=1),
        max_concurrent_trials=_int(searcher, "max_concurrent_trials", 16, errors, minimum=0),
        time_metric=searcher.get("time_metric"),
        max_time=_optional_int(searcher, "max_time", errors),
        mode=str(searcher.get("mode") or "standard"),
        divisor=_divisor(searcher, errors),
        max_rungs=_int(searcher, "max_rungs", 5, errors, minimum=1),
        bracket_rungs=_bracket_rungs(searcher, errors),
        num_rungs=_optional_int(searcher, "num_rungs", errors),
        stop_once=bool(searcher.get("stop_once") or False),
    )
    _check_asha(settings, errors)
    if errors:
        raise ValueError("invalid searcher config:\n  " + "\n  ".join(errors))
    return settings


def _parse_length(value: Any, errors: list[str]) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, Mapping) and len(value) == 1:
        ((unit, n),) = value.items()
        if unit in LENGTH_UNITS and isinstance(n, int) and not isinstance(n, bool) and n >= 1:
            return n
    errors.append(
        f"searcher.max_length: got {value!r}; expected a non-negative int or"
        " {batches|records|epochs: N} with N >= 1"
    )
    return None


def _int(
    searcher: Mapping[str, Any], key: str, default: int, errors: list[str], minimum: int
) -> int:
    value = searcher.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        errors.append(f"searcher.{key}: got {value!r}; expected an int >= {minimum}")
        return default
    return value


def _optional_int(searcher: Mapping[str, Any], key: str, errors: list[str]) -> int | None:
    value = searcher.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        errors.append(f"searcher.{key}: got {value!r}; expected an int >= 1")
        return None
    return value


def _divisor(searcher: Mapping[str, Any], errors: list[str]) -> float:
    value = searcher.get("divisor")
    if value is None:
        return 4.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 1:
        errors.append(f"searcher.divisor: got {value!r}; expected a number > 1")
        return 4.0
    return float(value)


def _bracket_rungs(searcher: Mapping[str, Any], errors: list[str]) -> tuple[int, ...]:
    value = searcher.get("bracket_rungs") or []
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value
    ):
        errors.append(f"searcher.bracket_rungs: got {value!r}; expected a list of ints >= 1")
        return ()
    return tuple(value)


def _check_asha(settings: SearcherSettings, errors: list[str]) -> None:
    if settings.name not in ASHA_SEARCHERS:
        return
    if settings.length is None:
        if not settings.time_metric:
            errors.append("searcher.time_metric: required (or set max_length for 0.37 semantics)")
        if settings.max_time is None:
            errors.append("searcher.max_time: required (or set max_length for 0.37 semantics)")
    elif settings.length < 1:
        errors.append(f"searcher.max_length: got {settings.length}; ASHA needs a length >= 1")
    if settings.name == "async_halving" and settings.num_rungs is None:
        errors.append("searcher.num_rungs: required for async_halving (an int >= 1)")
    if settings.name == "adaptive_asha" and settings.mode not in MODES:
        errors.append(f"searcher.mode: got {settings.mode!r}; expected one of {', '.join(MODES)}")
