"""``Length``: a training length such as ``{batches: 100}`` or a bare, unitless int."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeGuard

from pydantic import PlainSerializer, PlainValidator

from trialkit.config._errors import custom_error, show, suggest

Unit = Literal["batches", "records", "epochs"]
UNITS: tuple[Unit, ...] = ("batches", "records", "epochs")
#: Longest length: trial lengths are stored in 32-bit INTEGER columns (PostgreSQL).
MAX_LENGTH = 2**31 - 1


@dataclass(frozen=True)
class Length:
    """A length in ``unit`` (None: a bare int, which Determined keeps unitless)."""

    unit: Unit | None
    value: int

    @classmethod
    def parse(cls, raw: object, *, allow_bare: bool = True, minimum: int = 0) -> Length:
        """Parse ``{batches|records|epochs: N}`` or a bare int; ValueError says what is wrong."""
        return parse_length(raw, allow_bare=allow_bare, dict_minimum=minimum, bare_minimum=minimum)

    def to_raw(self) -> int | dict[str, int]:
        """The config form: ``{unit: value}``, or the bare int when there is no unit."""
        return self.value if self.unit is None else {self.unit: self.value}

    def __str__(self) -> str:
        return str(self.value) if self.unit is None else f"{self.value} {self.unit}"


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_length(
    raw: object, *, allow_bare: bool, dict_minimum: int, bare_minimum: int = 0
) -> Length:
    """Parse a length, raising ValueError with a one-line message and the fix."""
    if isinstance(raw, Length):
        return raw
    form = "{batches|records|epochs: N}" + (" or an integer" if allow_bare else "")
    if _is_int(raw) and allow_bare:
        if raw < bare_minimum:
            raise ValueError(f"expected an integer >= {bare_minimum}, got {raw}")
        _check_not_too_long(raw)
        return Length(None, raw)
    if _is_int(raw):
        raise ValueError(f"expected {form}, got a bare integer {raw}; write {{batches: {raw}}}")
    if not isinstance(raw, dict):
        raise ValueError(f"expected {form}, got {show(raw)}")
    return _parse_unit_dict(raw, dict_minimum)


def _parse_unit_dict(raw: dict[Any, Any], minimum: int) -> Length:
    """Parse the ``{unit: N}`` form (exactly one key)."""
    if len(raw) != 1:
        raise ValueError(
            f"expected exactly one of batches, records, epochs, got {show(raw)}; keep one unit"
        )
    ((unit, value),) = raw.items()
    if unit not in UNITS:
        guess = suggest(unit, UNITS)
        hint = f"did you mean {guess}?" if guess else "use batches, records or epochs"
        raise ValueError(f"unknown unit {show(unit)}; {hint}")
    if not _is_int(value) or value < minimum:
        raise ValueError(f"expected {{{unit}: N}} with an integer N >= {minimum}, got {show(raw)}")
    _check_not_too_long(value)
    return Length(unit, value)


def _check_not_too_long(value: int) -> None:
    if value > MAX_LENGTH:
        raise ValueError(f"{show(value)} is too long; the longest length is {MAX_LENGTH}")


def _pydantic(fn: Any) -> PlainValidator:
    """Wrap a parser so its ValueError becomes a trialkit error at the field's path."""

    def validate(raw: object) -> Length:
        try:
            return fn(raw)  # type: ignore[no-any-return]
        except ValueError as exc:
            raise custom_error(str(exc)) from None

    return PlainValidator(validate)


def _dump(length: Length) -> int | dict[str, int]:
    return length.to_raw()


_SERIALIZE = PlainSerializer(_dump)

#: ``searcher.max_length``: a bare int >= 0 or ``{unit: N}`` with N >= 1.
MaxLength = Annotated[
    Length,
    _pydantic(lambda raw: parse_length(raw, allow_bare=True, dict_minimum=1)),
    _SERIALIZE,
]

#: ``min_validation_period`` / ``min_checkpoint_period``: ``{unit: N}`` with N >= 0.
PeriodLength = Annotated[
    Length,
    _pydantic(lambda raw: parse_length(raw, allow_bare=False, dict_minimum=0)),
    _SERIALIZE,
]
