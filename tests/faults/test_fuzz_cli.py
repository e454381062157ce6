"""Fuzzing the CLI: random argv for every command (in-process through ``main()``, against one
real master shared by the module) exits 0, 1 or 2, says what is wrong in a ``trialkit: error:``
line, and never prints a traceback. Figures are printed at the end of the module.

Left out, as they would block or stop the shared master: ``master up/down`` and ``--follow``.
``experiment create`` always gets ``--paused`` or ``--dry-run``, so no trial is launched by it."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.faults.fuzz_support import BASE_CONFIGS, FuzzFigures, deep_json, print_figures
from tests.integration.conftest import _kill_leftover_trials
from tests.unit.config.test_config_limits import ALIAS_BOMB
from trialkit.cli import cli, main
from trialkit.client import start_background, stop_master

pytestmark = pytest.mark.integration

QUICK = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SLOW = settings(QUICK, max_examples=1500)
EXCLUDED = {("master", "up"), ("master", "down")}
BLOCKING_OPTIONS = {"-f", "--follow", "--follow-first-trial"}


def _commands(
    group: click.Group, prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], click.Command]]:
    out = []
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        if isinstance(command, click.Group):
            out.extend(_commands(command, path))
        elif path not in EXCLUDED:
            out.append((path, command))
    return out


COMMANDS = _commands(cli)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Inputs a user might point the CLI at, good and hostile."""
    root = tmp_path_factory.mktemp("fuzz-cli-files")
    quick = {**BASE_CONFIGS[0], "entrypoint": "python3 -c pass", "max_restarts": 0}
    texts = {
        "good.yaml": json.dumps(quick),
        "bomb.yaml": ALIAS_BOMB,
        "deep.yaml": "a: " + deep_json(3000).text,
        "bigint.yaml": "hyperparameters: {x: " + "9" * 5000 + "}",
        "bad.yaml": "name: [unclosed",
        "list.yaml": "- 1\n- 2",
        "empty.yaml": "",
        "binary.yaml": "\udcff",
    }
    out = {}
    for name, text in texts.items():
        (root / name).write_bytes(text.encode("utf-8", "surrogateescape"))
        out[name] = str(root / name)
    (root / "model").mkdir()
    out["model"] = str(root / "model")
    out["missing"] = str(root / "missing.yaml")
    return out


@pytest.fixture(scope="module")
def master_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("fuzz-cli-master")
    client = start_background(home, slots=2)
    client.close()
    try:
        yield home
    finally:
        stop_master(home)
        _kill_leftover_trials(home)


@pytest.fixture(scope="module")
def figures(request: pytest.FixtureRequest) -> Iterator[FuzzFigures]:
    fig = FuzzFigures("CLI")
    yield fig
    print_figures(request.config, fig)


HOSTILE_WORDS = ["-1", "0", "1", "2", "9" * 30, "nan", "", "../../etc/passwd", "--", "-", "é✓"]


def value_for(param: click.Parameter, files: dict[str, str]) -> Any:
    if isinstance(param.type, click.types.IntParamType):
        return st.one_of(st.integers(-3, 5).map(str), st.sampled_from(HOSTILE_WORDS))
    if isinstance(param.type, click.Path):
        return st.sampled_from([*files.values(), *HOSTILE_WORDS])
    return st.one_of(
        st.sampled_from(HOSTILE_WORDS),
        st.text(st.characters(blacklist_categories=["Cs", "Cc"]), max_size=20),
        st.sampled_from(["searcher.max_trials=4", "a.b=[1", "x=" + "9" * 5000, "=", "a..b=1"]),
    )


@st.composite
def argvs(draw: Any, files: dict[str, str]) -> list[str]:
    path, command = draw(st.sampled_from(COMMANDS))
    argv = list(path)
    for param in command.params:
        if isinstance(param, click.Argument):
            if draw(st.integers(0, 9)) > 0:  # sometimes left out
                argv.append(draw(value_for(param, files)))
            continue
        assert isinstance(param, click.Option)
        opts = [o for o in param.opts if o not in BLOCKING_OPTIONS]
        if not opts or not draw(st.booleans()):
            continue
        argv.append(draw(st.sampled_from(opts)))
        if not param.is_flag and draw(st.integers(0, 9)) > 0:
            argv.append(draw(value_for(param, files)))
    if draw(st.integers(0, 4)) == 0:  # stray words and options
        argv.insert(
            draw(st.integers(0, len(argv))),
            draw(st.sampled_from([*HOSTILE_WORDS, "--bogus", "-x", "--help"])),
        )
    if path == ("experiment", "create") and "--dry-run" not in argv:
        argv.append("--paused")
    return argv


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as e:
            code = e.code
    return (
        (code if isinstance(code, int) else (0 if code is None else 1)),
        out.getvalue(),
        err.getvalue(),
    )


def check(figures: FuzzFigures, argv: list[str]) -> None:
    figures.inputs += 1
    try:
        code, out, err = run_cli(argv)
    except Exception as e:
        figures.tracebacks += 1
        raise AssertionError(f"trialkit {argv!r} raised {type(e).__name__}: {e}") from e
    figures.outcomes[f"exit {code}"] += 1
    assert "Traceback" not in out + err, f"trialkit {argv!r} printed a traceback:\n{err}"
    assert code in (0, 1, 2), f"trialkit {argv!r} exited {code}: {err}"
    if code != 0:
        first = err.strip().splitlines()[0] if err.strip() else ""
        assert first.startswith("trialkit: error: ") and len(first) > 17, f"{argv!r}: {err!r}"


@QUICK
@given(data=st.data())
def test_random_argv(
    figures: FuzzFigures,
    files: dict[str, str],
    master_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    data: st.DataObject,
) -> None:
    monkeypatch.setenv("TRIALKIT_HOME", str(master_home))
    monkeypatch.chdir(tmp_path)
    check(figures, data.draw(argvs(files)))


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_random_argv_long(
    figures: FuzzFigures,
    files: dict[str, str],
    master_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    data: st.DataObject,
) -> None:
    monkeypatch.setenv("TRIALKIT_HOME", str(master_home))
    monkeypatch.chdir(tmp_path)
    check(figures, data.draw(argvs(files)))


def test_every_command_succeeds_on_valid_input(
    files: dict[str, str], master_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI's own requests pass the master's input checks (a CLI bug would show as exit 2)."""
    monkeypatch.setenv("TRIALKIT_HOME", str(master_home))
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["experiment", "create", files["good.yaml"], files["model"]])
    assert code == 0, err
    exp = out.strip().split()[-1]
    commands = [
        ["experiment", "list", "--all"],
        ["experiment", "describe", exp, "--json"],
        ["experiment", "logs", exp],
        ["experiment", "preview", files["good.yaml"]],
        ["trial", "list", exp],
        ["checkpoint", "list", exp],
        ["master", "status"],
    ]
    for argv in commands:
        code, _, err = run_cli(argv)
        assert code == 0, f"trialkit {' '.join(argv)}: {err}"
    code, out, _ = run_cli(["trial", "list", exp, "--json"])
    for trial in json.loads(out):
        for argv in (["trial", "describe", str(trial["id"])], ["trial", "logs", str(trial["id"])]):
            code, _, err = run_cli(argv)
            assert code == 0, f"trialkit {' '.join(argv)}: {err}"
