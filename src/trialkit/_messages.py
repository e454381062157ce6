"""One line that says why something failed, from a message that may span many lines."""

from __future__ import annotations

from collections.abc import Sequence

#: The most of a multi-line message one summary line carries.
SUMMARY_CHARS = 400


def summary_line(lines: Sequence[str]) -> str:
    """The first non-empty line; when it only introduces what follows (it ends with ``:``, as
    TensorFlow's ``ValueError: in user code:`` does), ``first … last`` non-empty line, since
    the cause is at the end. At most SUMMARY_CHARS characters."""
    shown = [ln.strip() for ln in lines if ln.strip()]
    if not shown:
        return ""
    first, last = shown[0], shown[-1]
    text = f"{first} … {last}" if first.endswith(":") and len(shown) > 1 else first
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
