"""Every code block of the docs guides runs: python blocks are executed, yaml blocks loaded by
trialkit's config loader, shell blocks' commands run (``trialkit`` ones against a real master
where the block is marked ``master``, else parsed by the CLI). See tests/docs/blocks.py."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from tests.docs.blocks import REPO, Block, blocks, guide_pages
from tests.integration.conftest import Master, master  # noqa: F401  (the fixture)
from trialkit.cli import cli
from trialkit.cli._det import translate as det_translate
from trialkit.config import load_config

PAGES = guide_pages()
#: Blocks marked ``test: skip``: each one is a block a reader cannot run as shown (installs).
MAX_SKIPPED = 3
_SHELL = {"bash", "sh", "shell", "console"}
_FRAMEWORKS = {"torch": "torch", "tf": "tensorflow"}


def _split_env(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """Leading ``NAME=value`` words (environment for the command) and the command."""
    env = {}
    while argv and "=" in argv[0] and argv[0].split("=")[0].isidentifier():
        name, _, value = argv.pop(0).partition("=")
        env[name] = value
    return env, argv


def _commands(block: Block) -> list[list[str]]:
    """The commands of a shell block: comments dropped, ``\\`` continuations joined."""
    text = block.text.replace("\\\n", " ")
    lines = (line.split(" #")[0].strip() for line in text.splitlines())
    return [shlex.split(line) for line in lines if line and not line.startswith("#")]


def parse_cli(args: list[str]) -> str:
    """Parse ``trialkit ARGS`` like the CLI does, without running it; the command's path."""
    ctx = cli.make_context("trialkit", list(args))
    cmd: click.Command = cli
    names = []
    while isinstance(cmd, click.Group):
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        name, sub, rest = cmd.resolve_command(ctx, rest)
        assert sub is not None and name is not None
        cmd = sub
        ctx = cmd.make_context(name, rest, parent=ctx)
        names.append(name)
    return " ".join(names)


def _env() -> dict[str, str]:
    src = str(REPO / "src")
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{path}" if path else src}


def _run(argv: list[str], cwd: Path, env: dict[str, str], where: str) -> str:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    out = f"{proc.stdout}\n{proc.stderr}"
    assert proc.returncode == 0, f"{where}: {shlex.join(argv)} exited {proc.returncode}:\n{out}"
    return out


def _missing_framework(page: list[Block]) -> str | None:
    for flag, module in _FRAMEWORKS.items():
        needed = any(flag in b.flags for b in page if b.skip is None)
        if needed and importlib.util.find_spec(module) is None:
            return module
    return None


def test_every_block_is_known_and_few_are_skipped() -> None:
    all_blocks = [b for page in PAGES for b in blocks(page)]
    skipped = [f"{b.where} ({b.skip})" for b in all_blocks if b.skip]
    assert len(skipped) <= MAX_SKIPPED, skipped
    langs = {b.lang for b in all_blocks}
    assert langs <= {"python", "yaml", "text", *_SHELL}, langs
    assert len(all_blocks) > 30  # the guides are read, not an empty list


@pytest.mark.parametrize("page", PAGES)
def test_yaml_blocks_load_and_commands_parse(page: str, tmp_path: Path) -> None:
    """Fast and framework-free: configs load, trialkit command lines parse."""
    for block in blocks(page):
        if block.skip or "ray" in block.flags:  # tests/ray/test_docs_recipe.py runs those
            continue
        if block.lang == "yaml" and "searcher:" in block.text:
            path = tmp_path / "config.yaml"
            path.write_text(block.text)
            load_config(path)
        elif block.lang in _SHELL:
            for argv in _commands(block):
                argv = _split_env(argv)[1]
                if argv[0] == "trialkit":
                    parse_cli(argv[1:])
                elif argv[0] == "det":
                    for line in det_translate(argv[1:]):
                        parse_cli(line)
                else:
                    assert argv[0] in ("python", "python3"), f"{block.where}: {argv[0]}: mark it"


@pytest.mark.integration
@pytest.mark.parametrize("page", PAGES)
def test_guide_runs(page: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The page's blocks in order, in one work directory, as a reader would run them."""
    page_blocks = blocks(page)
    missing = _missing_framework(page_blocks)
    if missing:
        pytest.skip(f"docs/{page} needs {missing}")
    work = tmp_path / "work"
    work.mkdir()
    env = _env()
    for n, block in enumerate(page_blocks):
        if block.skip or block.lang == "text" or "ray" in block.flags:
            continue
        if block.file:
            (work / block.file).parent.mkdir(parents=True, exist_ok=True)
            (work / block.file).write_text(block.text)
        if block.lang == "python" and not block.file:
            script = work / f"_block{n}.py"
            script.write_text(block.text)
            _run([sys.executable, script.name], work, env, block.where)
        elif block.lang == "python":
            compile(block.text, block.where, "exec")
        elif block.lang in _SHELL:
            _run_shell(block, work, env, request)


def _run_shell(
    block: Block, work: Path, env: dict[str, str], request: pytest.FixtureRequest
) -> None:
    cwd = REPO if "repo" in block.flags else work
    if "master" in block.flags:
        env = {**request.getfixturevalue("master").env, "PYTHONPATH": env["PYTHONPATH"]}
    for line in _commands(block):
        extra, argv = _split_env(line)
        if argv[0] in ("python", "python3"):
            _run([sys.executable, *argv[1:]], cwd, {**env, **extra}, block.where)
        elif "master" in block.flags:
            _run([sys.executable, "-m", "trialkit.cli", *argv[1:]], cwd, env, block.where)
        elif argv[0] == "det":
            for translated in det_translate(argv[1:]):
                parse_cli(translated)
        else:
            parse_cli(argv[1:])


def test_extras_lists_name_pyproject_s_extras_and_the_site_has_no_placeholder_link() -> None:
    """README and the quickstart list the same extras, those pyproject.toml defines."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for doc, lead in (("README.md", "(extras:"), ("docs/quickstart.md", "the extras are")):
        text = " ".join((REPO / doc).read_text().split())
        listed = text.split(lead, 1)[1].split(";" if doc == "README.md" else "(`pip", 1)[0]
        assert set(re.findall(r"`([a-z0-9_]+)`", listed)) == set(extras), doc
    assert "example.invalid" not in (REPO / "mkdocs.yml").read_text()
