"""``import determined`` without Determined: a meta path finder that maps ``determined.X`` to
``trialkit.X`` (one module object each: ``determined.core is trialkit.core``).

Installed in every process the master starts (``boot/sitecustomize.py`` on their PYTHONPATH,
which puts a stand-in finder in place that imports this module on the first ``determined``
import) and, opt-in, in any interpreter by ``trialkit alias install`` (a ``.pth`` file).
It never shadows a real ``determined``: the top-level name is aliased only when no other
importer can find it. ``TRIALKIT_DETERMINED_ALIAS=0`` turns it off.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ENV_SWITCH = "TRIALKIT_DETERMINED_ALIAS"
BOOT_DIR = Path(__file__).resolve().parent / "boot"

#: ``determined`` names whose trialkit module is not ``trialkit`` + the same suffix.
_RENAMES = {
    "determined.pytorch.deepspeed": "trialkit.deepspeed",
    # Determined's docs also spell the launchers ``determined.launcher.X`` (the Core API guide's
    # ``python -m determined.launcher.wrap_rank``).
    "determined.launcher": "trialkit.launch",
}


def enabled() -> bool:
    """False when ``TRIALKIT_DETERMINED_ALIAS`` is set to 0/false/no/off."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def target_name(fullname: str) -> str:
    """The trialkit module that ``determined.X`` stands for."""
    for prefix in sorted(_RENAMES, key=len, reverse=True):
        if fullname == prefix or fullname.startswith(prefix + "."):
            return _RENAMES[prefix] + fullname[len(prefix) :]
    return "trialkit" + fullname[len("determined") :]


def is_alias(module: object) -> bool:
    """Whether ``module`` is the alias ``determined`` package (not a real Determined)."""
    return bool(getattr(module, "__trialkit_alias__", False))


class _TopLoader(importlib.abc.Loader):
    """Creates the ``determined`` package: a thin module over trialkit's top-level names."""

    def exec_module(self, module: ModuleType) -> None:
        from ._top import populate

        populate(module)


class _AliasLoader(importlib.abc.Loader):
    """Loads ``determined.X`` as the already-imported ``trialkit.X`` module object."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped our spec on the shared module; give it its own back.
        spec = module.__spec__
        if spec is not None and spec.loader_state is not None:
            module.__spec__ = spec.loader_state

    def get_code(self, fullname: str) -> Any:
        """The target's code, for ``python -m determined.launch.X``."""
        spec = importlib.util.find_spec(self.target)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "get_code"):
            raise ImportError(f"{fullname} ({self.target}) cannot be run with -m", name=fullname)
        return loader.get_code(self.target)

    def is_package(self, fullname: str) -> bool:
        spec = importlib.util.find_spec(self.target)
        return spec is not None and spec.submodule_search_locations is not None


class DeterminedAliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``determined`` (only when nothing else does) and, under the alias, its submodules."""

    _trialkit_determined_alias = True  # marks every alias finder, the boot's stand-in too

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "determined":
            if not enabled() or self._real_determined_exists():
                return None
            return importlib.machinery.ModuleSpec("determined", _TopLoader(), is_package=True)
        if not fullname.startswith("determined.") or not is_alias(sys.modules.get("determined")):
            return None
        name = target_name(fullname)
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            return None
        if found is None:
            return None
        return importlib.machinery.ModuleSpec(
            fullname,
            _AliasLoader(name),
            origin=found.origin,
            is_package=found.submodule_search_locations is not None,
        )

    def _real_determined_exists(self) -> bool:
        for finder in sys.meta_path:
            if getattr(finder, "_trialkit_determined_alias", False):
                continue
            find = getattr(finder, "find_spec", None)
            if find is not None and find("determined", None) is not None:
                return True
        return False


def install() -> bool:
    """Put the finder first on ``sys.meta_path`` (once); False when switched off."""
    if not enabled():
        return False
    if not any(getattr(f, "_trialkit_determined_alias", False) for f in sys.meta_path):
        sys.meta_path.insert(0, DeterminedAliasFinder())
    return True


def with_boot_dir(pythonpath: str | None, *then: str) -> str:
    """A PYTHONPATH that starts the alias in the processes it reaches: the boot dir (once;
    its only module is ``sitecustomize``, which runs any other one), ``then``, the rest."""
    boot = str(BOOT_DIR)
    rest = [p for p in (pythonpath or "").split(os.pathsep) if p and p != boot]
    return os.pathsep.join([boot, *then, *rest])


def uninstall() -> None:
    """Remove the finder (modules already imported stay imported)."""
    sys.meta_path[:] = [
        f for f in sys.meta_path if not getattr(f, "_trialkit_determined_alias", False)
    ]


__all__ = [
    "BOOT_DIR",
    "ENV_SWITCH",
    "DeterminedAliasFinder",
    "enabled",
    "install",
    "is_alias",
    "target_name",
    "uninstall",
    "with_boot_dir",
]
