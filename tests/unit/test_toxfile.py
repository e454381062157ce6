"""toxfile.py, tox's inline plugin: in the full run (TRIALKIT_TOX_DROP_ENVS=1) an env's directory
goes once every command of it passed; a failed env, or any env without the variable, stays."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import paths


@pytest.fixture
def toxfile(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    # tox is not installed in the test envs (only in .venv-tox): its hook marker is a decorator
    plugin = types.ModuleType("tox.plugin")
    plugin.impl = lambda f: f  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tox", types.ModuleType("tox"))
    monkeypatch.setitem(sys.modules, "tox.plugin", plugin)
    spec = importlib.util.spec_from_file_location("toxfile", paths.REPO / "toxfile.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _env(tmp_path: Path, name: str) -> SimpleNamespace:
    env_dir = tmp_path / name
    (env_dir / "bin").mkdir(parents=True)
    return SimpleNamespace(name=name, env_dir=env_dir)


def _run(toxfile: types.ModuleType, env: SimpleNamespace, *codes: int) -> None:
    outcomes = [SimpleNamespace(exit_code=c) for c in codes]
    toxfile.tox_after_run_commands(env, codes[-1], outcomes)
    toxfile.tox_env_teardown(env)


def test_the_full_run_drops_an_env_whose_commands_all_passed(
    toxfile: types.ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIALKIT_TOX_DROP_ENVS", "1")
    env = _env(tmp_path, "torch")
    _run(toxfile, env, 0, 0)
    assert not env.env_dir.exists()


def test_an_env_with_a_failed_command_stays(
    toxfile: types.ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIALKIT_TOX_DROP_ENVS", "1")
    mixed, failed = _env(tmp_path, "torch"), _env(tmp_path, "py")
    _run(toxfile, mixed, 1, 0)  # ignore_errors reports the last code: each one counts
    _run(toxfile, failed, 3)
    assert mixed.env_dir.exists() and failed.env_dir.exists()


def test_without_the_variable_every_env_stays(
    toxfile: types.ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRIALKIT_TOX_DROP_ENVS", raising=False)
    env = _env(tmp_path, "py")
    _run(toxfile, env, 0)
    assert env.env_dir.exists()
