"""``trialkit t logs`` / ``e logs`` against an in-process master served on loopback: what trial
output may reach the terminal, and how a long log is read (in pages, the tail from the end)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.inprocess_master import TOKEN, InProcessMaster, inprocess_master, served

from trialkit._client import MasterClient
from trialkit.cli import _common, _trial, cli

HOSTILE = "ring\x07cancel\x18cr\rclear\x1b[2Jtitle\x1b]0;owned\x07\x1b[31mred\x1b[0m\tend"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        m.create()  # experiment 1 with trial 1
        yield m


@pytest.fixture
def cli_on(api: InProcessMaster, monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    """A CLI runner whose commands talk to ``api`` over loopback."""
    with served(api.app) as url:
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
