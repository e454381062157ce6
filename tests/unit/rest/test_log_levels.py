"""The logs filters' rules (``trialkit t logs --level/--rank``; the web UI's JS mirrors them),
on the log the UI's browser test filters (tests/integration/_ranked_logs.py)."""

from __future__ import annotations

import pytest

from trialkit.rest import LogLabel, log_labeller, log_level_name, log_line_shown

# What LAUNCH and WORKER of tests/integration/_ranked_logs.py write, in order.
LOG = [
    "[rank=0] || DEBUG: [11] worker: debug from rank 0",
    "[rank=0] || INFO: [11] worker: info from rank 0",
    "[rank=0] || WARNING: [11] worker: warning from rank 0",
    "[rank=1] || DEBUG: [12] worker: debug from rank 1",
    "[rank=1] || INFO: [12] worker: info from rank 1",
    "[rank=1] || WARNING: [12] worker: warning from rank 1",
    "[rank=1] || ERROR: [12] worker: error from rank 1",
    "[rank=1] || Traceback (most recent call last):",
    '[rank=1] ||   File "worker.py", line 11, in <module>',
    '[rank=1] ||     raise ValueError("bad batch")',
    "[rank=1] || ValueError: bad batch",
    "launcher: both workers done",
]


def _shown(min_level: str | None, rank: int | None | str) -> list[str]:
    label = log_labeller()
    return [ln for ln in LOG if log_line_shown(label(ln), min_level, rank)]


def test_any_level_and_rank_shows_every_line() -> None:
    assert _shown(None, "any") == LOG


def test_a_level_shows_it_and_above_with_the_traceback_of_an_error() -> None:
    shown = _shown("WARNING", "any")
    assert sum("warning from rank" in ln for ln in shown) == 2
    assert "[rank=1] || ValueError: bad batch" in shown  # the ERROR's traceback
    assert not any("info from" in ln or "debug from" in ln for ln in shown)
    assert "launcher: both workers done" not in shown  # no level of its own


def test_error_of_rank_1_is_its_message_then_its_traceback() -> None:
    shown = _shown("ERROR", 1)
    assert shown[0] == "[rank=1] || ERROR: [12] worker: error from rank 1"
    assert shown[1] == "[rank=1] || Traceback (most recent call last):"
    assert shown[-1] == "[rank=1] || ValueError: bad batch"
    assert len(shown) == 5


def test_a_rank_alone_and_the_lines_without_one() -> None:
    levels = [ln.split("|| ", 1)[1].split(": ", 1)[0] for ln in _shown(None, 0)]
    assert levels == ["DEBUG", "INFO", "WARNING"]
    assert _shown(None, None) == ["launcher: both workers done"]


def test_a_line_without_a_level_takes_the_last_one_of_its_own_rank() -> None:
    label = log_labeller()
    assert label("plain start") == LogLabel(None, None)  # before any level: none
    assert label("[rank=0] || ERROR: boom") == LogLabel(0, "ERROR")
    assert label("[rank=1] || INFO: fine") == LogLabel(1, "INFO")
    assert label("[rank=0] || continued") == LogLabel(0, "ERROR")
    assert label("also plain") == LogLabel(None, None)  # rank 0's level is not the launcher's


@pytest.mark.parametrize(
    ("line", "level"),
    [
        ("WARNING:root:logging's default format", "WARNING"),
        ("2026-01-01 10:00:00,123 ERROR after a timestamp", "ERROR"),
        ("WARN: an alias", "WARNING"),
        ("FATAL: another", "CRITICAL"),
        ("INFORMATION: not a level", None),
        ("an INFO: inside the line", None),
    ],
)
def test_the_formats_a_level_is_read_from(line: str, level: str | None) -> None:
    assert log_labeller()(line).level == level


def test_level_names_are_read_in_any_case_and_by_alias() -> None:
    assert [log_level_name(n) for n in ("debug", "Warn", "fatal")] == [
        "DEBUG",
        "WARNING",
        "CRITICAL",
    ]
    with pytest.raises(ValueError, match="no log level 'LOUD'"):
        log_level_name("LOUD")
