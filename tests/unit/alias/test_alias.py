"""The ``determined`` alias: one module object per name, lazy, never shadowing a real
Determined, off by a setting; checked in fresh interpreters as the master starts them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import paths
from trialkit._alias import BOOT_DIR, target_name

SRC = paths.SRC


def _run(
    code: str, *, path: list[Path] | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new interpreter whose PYTHONPATH starts with the alias boot dir."""
    pythonpath = [BOOT_DIR, SRC, *(path or [])]
    full_env = {k: v for k, v in os.environ.items() if k != "TRIALKIT_DETERMINED_ALIAS"}
    full_env.update(PYTHONPATH=os.pathsep.join(map(str, pythonpath)), **(env or {}))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _ok(code: str, **kw: object) -> str:
    proc = _run(code, **kw)  # type: ignore[arg-type]
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_determined_names_are_trialkit_objects() -> None:
    pytest.importorskip("torch")
    _ok(
        """
        import sys
        import determined as det
        import trialkit
        assert "torch" not in sys.modules, "import determined must not import torch"
        from determined import core, pytorch
        import determined.pytorch.samplers as samplers
        import trialkit.core, trialkit.pytorch, trialkit.pytorch.samplers
        assert core is trialkit.core and det.core is core
        assert pytorch is trialkit.pytorch and det.pytorch is pytorch
        assert samplers is trialkit.pytorch.samplers and det.pytorch.samplers is samplers
        assert det.get_cluster_info is trialkit.get_cluster_info
        assert det.TrialInfo is trialkit.TrialInfo and det.ClusterInfo is trialkit.ClusterInfo
        assert det.InvalidHP is trialkit.InvalidHP and det.LOG_FORMAT == trialkit.LOG_FORMAT
        assert det.pytorch.PyTorchTrial is trialkit.pytorch.PyTorchTrial
        # The shared module keeps its own identity.
        assert trialkit.core.__name__ == "trialkit.core"
        assert trialkit.core.__spec__.name == "trialkit.core"
        import determined.core._checkpoint as c, trialkit.core._checkpoint as c2
        assert c is c2
        assert det.get_cluster_info() is None
        """
    )


def test_keras_is_imported_only_when_asked() -> None:
    _ok(
        """
        import sys
        import determined as det
        det.core, det.generic, det.experimental
        assert "trialkit.keras" not in sys.modules
        from determined import keras
        import trialkit.keras
        assert keras is trialkit.keras and "DeterminedCallback" in keras.__all__
        """
    )


def test_deepspeed_maps_to_trialkit_deepspeed() -> None:
    import importlib.util

    pytest.importorskip("torch")

    if importlib.util.find_spec("trialkit.deepspeed") is None:
        proc = _run("import determined.pytorch.deepspeed")
        assert "No module named 'determined.pytorch.deepspeed'" in proc.stderr
        pytest.skip("trialkit.deepspeed is not in this tree yet")
    _ok(
        """
        import determined.pytorch.deepspeed as det_ds, trialkit.deepspeed
        assert det_ds is trialkit.deepspeed
        """
    )


def test_unknown_names_fail_naming_the_determined_name() -> None:
    proc = _run("import determined.common.api")
    assert proc.returncode == 1
    assert "No module named 'determined.common'" in proc.stderr
    proc = _run("import determined as det; det.no_such_thing")
    assert "has no attribute 'no_such_thing'" in proc.stderr
    proc = _run("import determined as det; det.experimental.no_such_module")
    assert "has no attribute 'no_such_module'" in proc.stderr


def test_python_m_determined_launch_runs_trialkit_launcher() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "determined.launch.wrap_rank",
            "3",
            "--",
            sys.executable,
            "-c",
            "import sys, determined; print(determined.launch is sys.modules['trialkit.launch'])",
        ],
        env={**os.environ, "PYTHONPATH": f"{BOOT_DIR}{os.pathsep}{SRC}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[rank=3] || True"]
    proc = subprocess.run(
        [sys.executable, "-m", "determined.launch.torch_distributed", "--help"],
        env={**os.environ, "PYTHONPATH": f"{BOOT_DIR}{os.pathsep}{SRC}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "torchrun" in proc.stdout


def test_the_launcher_spelling_resolves_for_every_launcher_module() -> None:
    """The Core API guide's ``python -m determined.launcher.wrap_rank`` (issue 32, 15b)."""
    out = _ok(
        """
        import importlib, pkgutil, trialkit.launch as tl
        names = [m.name for m in pkgutil.iter_modules(tl.__path__) if not m.name.startswith("_")]
        same = [importlib.import_module(f"determined.launcher.{n}") is importlib.import_module(
            f"trialkit.launch.{n}") for n in names]
        print(len(names) >= 6 and all(same))
        """
    )
    assert out.splitlines() == ["True"]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "determined.launcher.wrap_rank",
            "0",
            sys.executable,
            "-c",
            "1;print(2)",
        ],
        env={**os.environ, "PYTHONPATH": f"{BOOT_DIR}{os.pathsep}{SRC}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (proc.returncode, proc.stdout) == (0, "[rank=0] || 2\n"), proc.stderr


def test_a_real_determined_is_never_shadowed(tmp_path: Path) -> None:
    real = tmp_path / "site" / "determined"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n")
    out = _ok(
        """
        import determined
        print(determined.REAL, determined.__file__)
        try:
            import determined.core
        except ModuleNotFoundError as e:
            print("no core:", e.name)
        """,
        path=[tmp_path / "site"],
    )
    assert out.splitlines() == [f"True {real / '__init__.py'}", "no core: determined.core"]


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_the_setting_turns_the_alias_off(value: str) -> None:
    proc = _run("import determined", env={"TRIALKIT_DETERMINED_ALIAS": value})
    assert "No module named 'determined'" in proc.stderr


def test_boot_runs_the_next_sitecustomize(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.OTHER_SITE = 1\n")
    out = _ok("import builtins, determined; print(builtins.OTHER_SITE)", path=[other])
    assert out.strip() == "1"


def test_target_names() -> None:
    assert target_name("determined.core") == "trialkit.core"
    assert target_name("determined.pytorch.deepspeed") == "trialkit.deepspeed"
    assert target_name("determined.pytorch.deepspeed._trial") == "trialkit.deepspeed._trial"
    assert target_name("determined.pytorch.samplers") == "trialkit.pytorch.samplers"
    assert target_name("determined.launch.torch_distributed") == (
        "trialkit.launch.torch_distributed"
    )


def test_workers_of_a_trialkit_launcher_get_the_alias(tmp_path: Path) -> None:
    """A launcher run by hand (no master, no boot dir on PYTHONPATH) still starts its workers
    with the alias."""
    pytest.importorskip("torch")
    script = tmp_path / "worker.py"
    script.write_text("import determined, trialkit.core; print(determined.core is trialkit.core)\n")
    env = {k: v for k, v in os.environ.items() if k != "TRIALKIT_DETERMINED_ALIAS"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trialkit.launch.torch_distributed",
            "--",
            sys.executable,
            str(script),
        ],
        env={**env, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[rank=0] || True"]


def test_with_boot_dir_puts_it_first_once() -> None:
    from trialkit._alias import with_boot_dir

    boot = str(BOOT_DIR)
    assert with_boot_dir(None) == boot
    assert with_boot_dir(f"/a{os.pathsep}{boot}", "/model") == os.pathsep.join(
        [boot, "/model", "/a"]
    )


def test_the_boot_imports_trialkit_only_when_determined_is_imported() -> None:
    out = _ok(
        """
        import sys
        finders = [f for f in sys.meta_path if getattr(f, "_trialkit_determined_alias", False)]
        print(len(finders), "trialkit" in sys.modules)
        import json  # any other import leaves trialkit alone
        print("trialkit" in sys.modules)
        import determined
        print("trialkit" in sys.modules)
        """
    )
    assert out.split() == ["1", "False", "False", "True"]
