"""ConfigError and the helpers that validators use to report problems at a field path."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic_core
from pydantic_core import InitErrorDetails, PydanticCustomError

Loc = tuple[str | int, ...]

#: pydantic error type used for every message written by trialkit itself.
CUSTOM_ERROR = "trialkit"


class ConfigError(ValueError):
    """An invalid experiment config; ``errors`` holds every problem, one ``path: problem; fix`` each."""

    def __init__(self, errors: str | Sequence[str]) -> None:
        self.errors: list[str] = errors.splitlines() if isinstance(errors, str) else list(errors)
        super().__init__("\n".join(self.errors))

    def __str__(self) -> str:
        return "\n".join(self.errors)


@dataclass(frozen=True)
class Issue:
    """One problem found by a hand-written check, at ``loc`` relative to the model being checked."""

    loc: Loc
    message: str


def custom_error(message: str) -> PydanticCustomError:
    """A pydantic error that carries a finished trialkit message (braces are kept verbatim)."""
    return PydanticCustomError(CUSTOM_ERROR, "{message}", {"message": message})


def raise_issues(
    issues: Iterable[Issue], caught: pydantic_core.ValidationError | None = None, *, title: str = ""
) -> None:
    """Raise one ValidationError holding ``issues`` plus every error already in ``caught``."""
    details: list[InitErrorDetails] = [
        InitErrorDetails(type=custom_error(i.message), loc=i.loc, input=None) for i in issues
    ]
    if caught is not None:
        details.extend(_rebuild(err) for err in caught.errors())
    if details:
        raise pydantic_core.ValidationError.from_exception_data(title or "config", details)


def _rebuild(err: Any) -> InitErrorDetails:
    """Turn an error reported by pydantic back into something that can be raised again."""
    ctx = err.get("ctx") or {}
    if err["type"] == CUSTOM_ERROR:
        return InitErrorDetails(type=custom_error(ctx["message"]), loc=err["loc"], input=None)
    return InitErrorDetails(type=err["type"], loc=err["loc"], input=err.get("input"), ctx=ctx)


def suggest(word: object, options: Iterable[str]) -> str | None:
    """The option closest to a misspelled ``word``, if any is close enough."""
    if not isinstance(word, str):
        return None
    matches = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return matches[0] if matches else None


def unknown_key_message(key: object, options: Iterable[str]) -> str:
    """``unknown key; did you mean X?`` or, with no close match, the list of valid keys."""
    opts = sorted(options)
    guess = suggest(key, opts)
    if guess is not None:
        return f"unknown key; did you mean {guess}?"
    return f"unknown key; remove it (valid keys: {', '.join(opts)})"


def show(value: object, limit: int = 60) -> str:
    """A short repr of a user value for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_path(parts: Sequence[str | int]) -> str:
    """``("searcher", "max_trials")`` -> ``searcher.max_trials``; ints become ``[i]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{printable(part)}" if out else printable(part)
    return out or "config"


def printable(text: object) -> str:
    """``text`` on one line: newlines, control characters and lone surrogates escaped."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def finalize(lines: Iterable[str]) -> list[str]:
    """Drop duplicate messages and sort them stably by their path."""
    unique = list(dict.fromkeys(lines))
    return sorted(unique, key=lambda line: line.split(": ", 1)[0])
