"""``trialkit t logs`` / ``e logs`` against an in-process master served on loopback: what trial
output may reach the terminal, and how a long log is read (in pages, the tail from the end)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.inprocess_master import TOKEN, InProcessMaster, inprocess_master, served
from trialkit.cli import _common, _trial, cli
from trialkit.client import MasterClient

HOSTILE = "ring\x07cancel\x18cr\rclear\x1b[2Jtitle\x1b]0;owned\x07\x1b[31mred\x1b[0m\tend"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        m.create()  # experiment 1 with trial 1
        yield m


class LogReplies:
    """ASGI wrapper: the size of every reply of the log route, in order."""

    def __init__(self, app: Any) -> None:
        self.app, self.sizes = app, []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/logs"):
            return await self.app(scope, receive, send)
        size = 0

        async def counted(message: Any) -> None:
            nonlocal size
            if message["type"] == "http.response.body":
                size += len(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, counted)
        self.sizes.append(size)


@pytest.fixture
def replies(api: InProcessMaster) -> LogReplies:
    return LogReplies(api.app)


@pytest.fixture
def cli_on(replies: LogReplies, monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    """A CLI runner whose commands talk to ``api`` over loopback."""
    with served(replies) as url:
        client = MasterClient(url, TOKEN)
        monkeypatch.setattr(_common, "get_client", lambda start=True: client)
        monkeypatch.setattr(_trial, "get_client", lambda start=True: client)
        yield CliRunner()


def test_logs_print_no_control_characters_but_newline_and_tab(
    api: InProcessMaster, cli_on: CliRunner
) -> None:
    api.store.add_logs(1, 0, [HOSTILE])
    for args in (["t", "logs", "1"], ["e", "logs", "1"], ["t", "logs", "1", "--tail", "1"]):
        out = cli_on.invoke(cli, args, color=True)
        assert out.exit_code == 0, out.output
        assert "ringcancelcrcleartitlered\tend" in out.output, args
        assert not any(ord(c) < 32 and c not in "\t\n" for c in out.output), repr(out.output)


def test_color_keeps_only_colour_sequences(api: InProcessMaster, cli_on: CliRunner) -> None:
    api.store.add_logs(1, 0, [HOSTILE])
    out = cli_on.invoke(cli, ["t", "logs", "1", "--color"])
    assert out.exit_code == 0, out.output
    assert out.output == "ringcancelcrcleartitle\x1b[31mred\x1b[0m\tend\n"


def test_tail_is_read_from_the_end_of_the_log(
    api: InProcessMaster, cli_on: CliRunner, replies: LogReplies
) -> None:
    for start in range(0, 20_000, 5_000):
        api.store.add_logs(1, 0, [f"line {i}" for i in range(start, start + 5_000)])
    out = cli_on.invoke(cli, ["t", "logs", "1", "--tail", "3"])
    assert out.exit_code == 0, out.output
    assert out.output == "line 19997\nline 19998\nline 19999\n"
    # The master sent those three lines, not the 20,000 for the CLI to keep the last of.
    assert sum(replies.sizes) < 2_000, replies.sizes
    out = cli_on.invoke(cli, ["e", "logs", "1", "--tail", "0"])
    assert out.exit_code == 0 and out.output == ""


def test_a_long_log_comes_page_by_page(
    api: InProcessMaster, cli_on: CliRunner, replies: LogReplies
) -> None:
    long = [f"{i:03d}" + "x" * 100_000 for i in range(25)]  # 2.5 MB in 25 lines
    api.store.add_logs(1, 0, long)
    out = cli_on.invoke(cli, ["t", "logs", "1"])
    assert out.exit_code == 0
    assert out.output.splitlines() == long
    # No reply holds it all: the first page is printed before the rest is even read.
    assert len(replies.sizes) >= 3 and max(replies.sizes) < 1_200_000, replies.sizes
