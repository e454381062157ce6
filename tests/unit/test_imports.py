"""``import trialkit`` stays light: every worker of a distributed trial pays for it at start-up,
so the HTTP client and the store are imported only by the backend that needs them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def test_import_trialkit_pulls_in_neither_httpx_nor_sqlalchemy() -> None:
    code = (
        "import sys, trialkit, trialkit.core\n"
        "print(sorted(m for m in ('httpx', 'sqlalchemy', 'fastapi', 'torch') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def _imported(module: str, candidates: tuple[str, ...]) -> list[str]:
    """Which of ``candidates`` a fresh interpreter has loaded after ``import module``."""
    code = (
        f"import json, sys, {module}\n"
        f"print(json.dumps(sorted(m for m in {candidates!r} if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return list(json.loads(out.stdout))


def test_the_shared_loop_imports_no_framework() -> None:
    assert _imported("trialkit.harness", ("torch", "tensorflow", "keras")) == []


def test_the_keras_harness_never_imports_torch() -> None:
    assert _imported("trialkit.keras", ("torch",)) == []


def test_the_pytorch_harness_never_imports_tensorflow_or_keras() -> None:
    pytest.importorskip("torch", reason="trialkit.pytorch needs torch")
    assert _imported("trialkit.pytorch", ("tensorflow", "keras")) == []


def test_a_trial_builds_its_host_directory_storage_without_the_config_models() -> None:
    """Every trial builds its checkpoint storage from its config dict at start-up: for shared_fs
    and directory that loads neither pydantic nor the config models (+100 ms a trial start)."""
    code = (
        "import sys\n"
        "from trialkit.storage import build\n"
        "build({'type': 'shared_fs', 'host_path': '/tmp', 'storage_path': 'x'})\n"
        "build({'type': 'directory', 'container_path': '/tmp'})\n"
        "print(sorted(m for m in ('pydantic', 'trialkit.config') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_the_master_app_imports_optuna_only_when_asked_for_importances() -> None:
    """The importance route imports optuna on its first request, never at start-up."""
    assert _imported("trialkit.master.api._app", ("optuna", "sklearn")) == []
