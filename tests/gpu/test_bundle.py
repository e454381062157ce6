"""The GPU device's wheel bundle (.whl, scripts/gpu_wheels.sh) is complete: scripts/gpu_bundle_check.py
passes on it and fails when a wheel is missing, doubled, or a device package is too old."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
WHEELS = ROOT / ".whl"

_spec = importlib.util.spec_from_file_location(
    "gpu_bundle_check", ROOT / "scripts" / "gpu_bundle_check.py"
)
assert _spec is not None and _spec.loader is not None
check = importlib.util.module_from_spec(_spec)
sys.modules["gpu_bundle_check"] = check
_spec.loader.exec_module(check)

pytestmark = pytest.mark.skipif(
    not any(WHEELS.glob("*.whl")),
    reason="no .whl/: run bash scripts/gpu_wheels.sh (the gpu tox env does)",
)


def _python312() -> Path | None:
    for candidate in (check.PYENV_312, shutil.which("python3.12")):
        if candidate and Path(candidate).exists():
            return Path(candidate)
    return None


def _bundle_without(tmp_path: Path, *prefixes: str) -> Path:
    """A copy of .whl (as links) leaving out the wheels whose names start with ``prefixes``."""
    out = tmp_path / "whl"
    out.mkdir()
    for w in WHEELS.glob("*.whl"):
        if not w.name.lower().startswith(prefixes):
            os.symlink(w, out / w.name)
    return out


def test_the_built_bundle_meets_every_requirement() -> None:
    assert check.metadata_problems(WHEELS, check.device_packages()) == []
    names = {w.name.split("-")[0].lower() for w in WHEELS.glob("*.whl")}
    assert {"trialkit", "deepspeed", "keras"} <= names
    assert not any(n.startswith(("torch", "nvidia")) for n in names), "never carry torch or CUDA"


@pytest.mark.parametrize(
    ("left_out", "named"),
    [
        ("pydantic_core-", "pydantic requires pydantic-core"),
        ("hjson-", "deepspeed requires hjson"),
        ("optree-", "keras requires optree"),
        ("zlib_ng-", "trialkit requires zlib-ng"),
        ("deepspeed-", "deepspeed: needed by tests/gpu"),
        ("trialkit-", "trialkit: needed by tests/gpu"),
    ],
)
def test_a_missing_wheel_fails_the_check(tmp_path: Path, left_out: str, named: str) -> None:
    bundle = _bundle_without(tmp_path, left_out)
    problems = check.metadata_problems(bundle, check.device_packages())
    assert any(p.startswith(named) for p in problems), problems
    assert check.main(["--wheels", str(bundle)]) == 1


def test_two_versions_of_one_package_fail(tmp_path: Path) -> None:
    bundle = _bundle_without(tmp_path)
    [hjson] = bundle.glob("hjson-*.whl")
    os.symlink(hjson.resolve(), bundle / "hjson-3.0.0-py3-none-any.whl")
    problems = check.metadata_problems(bundle, check.device_packages())
    assert any("a second version of hjson" in p for p in problems), problems


def test_a_device_package_too_old_for_a_requirement_fails() -> None:
    device = {**check.device_packages(), "numpy": Version("1.20")}
    problems = check.metadata_problems(WHEELS, device)
    assert any(p.startswith("trialkit requires numpy>=1.24: the device has 1.20") for p in problems)


def test_the_device_list_holds_what_the_gpu_tests_import_but_not_trialkits_server_stack() -> None:
    device = check.device_packages()
    assert {"torch", "torchvision", "lightning", "pytest", "numpy", "nvidia-ml-py"} <= set(device)
    assert not {"fastapi", "sqlalchemy", "pydantic", "deepspeed", "keras"} & set(device)


@pytest.mark.slow
@pytest.mark.skipif(_python312() is None, reason="no CPython 3.12 (pyenv 3.12.1 or python3.12)")
def test_installed_as_on_the_device_trialkit_imports_and_a_master_runs() -> None:
    """~30-90 s: a fresh 3.12 venv of device packages, the wheels by --target, a real master."""
    python = _python312()
    assert python is not None
    assert check.install_problems(WHEELS, python, check.device_packages()) == []
