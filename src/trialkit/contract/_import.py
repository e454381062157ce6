"""``import_from_path``: import a module (a checkpoint's own ``code/`` copy of a model_def) from
one directory without it clashing with a same-named module already imported from elsewhere."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, overload

_active = threading.Lock()


def _module_dir(module: ModuleType) -> str | None:
    """The directory a module was imported from (a package's parent directory), or None."""
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve()
    return str(path.parent.parent if path.name == "__init__.py" else path.parent)


def _modules_from(directory: str) -> list[str]:
    """Names in ``sys.modules`` imported from ``directory`` (and their submodules)."""
    found: set[str] = set()
    for name, module in sorted(sys.modules.items()):
        if module is None:
            continue
        root = name.partition(".")[0]
        if root in found or _module_dir(module) == directory:
            found.add(name)
    return sorted(found)


@contextlib.contextmanager
def _isolated_import(path: str | os.PathLike[str]) -> Iterator[None]:
    directory = str(Path(path).resolve())
    if not _active.acquire(blocking=False):
        raise RuntimeError(
            "import_from_path cannot be nested or used from two threads at once: leave the "
            "first block before starting another"
        )
    old_path, old_bytecode = list(sys.path), sys.dont_write_bytecode
    set_aside: dict[str, ModuleType] = {}
    try:
        # The current directory's modules step aside, so the path's same-named ones win.
        local = {"", os.getcwd()}
        for here in {str(Path(p).resolve()) for p in local if p in sys.path}:
            for name in _modules_from(here):
                set_aside[name] = sys.modules.pop(name)
        sys.path[:] = [directory, *(p for p in old_path if p not in local)]
        sys.dont_write_bytecode = True  # no __pycache__ inside a checkpoint
        yield
    finally:
        for name in _modules_from(directory):
            del sys.modules[name]
        sys.path[:] = old_path
        sys.dont_write_bytecode = old_bytecode
        sys.modules.update(set_aside)
        _active.release()


@overload
def import_from_path(path: str | os.PathLike[str]) -> contextlib.AbstractContextManager[None]: ...
@overload
def import_from_path(path: str, module_dir: str | os.PathLike[str]) -> ModuleType: ...
def import_from_path(path: Any, module_dir: Any = None) -> Any:
    """Determined's ``with det.import_from_path(checkpoint_dir / "code"): import model_def``:
    inside the block the directory comes first on ``sys.path`` and the current directory's
    modules step aside; on leaving, what was imported from it is forgotten and the rest comes
    back, so old and new ``model_def`` can live side by side under different names.

    ``import_from_path("model_def", code_dir)`` (module name, then directory) imports that one
    module the same way and returns it."""
    if module_dir is None:
        return _isolated_import(path)
    with _isolated_import(module_dir):
        return importlib.import_module(path)
