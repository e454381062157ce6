"""Import the Trial class a checkpoint names (``trial_cls_spec``) from its ``code/`` copy; shared
by the PyTorch and Keras loaders, framework-free."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._import import import_from_path


def _check_code_dir(code_dir: Path) -> None:
    if not code_dir.is_dir():
        raise RuntimeError(f"{code_dir} is missing: pass the Trial class as trial_class=")


def _import_spec(code_dir: Path, spec: str) -> Any:
    """``module:qualname`` with ``code_dir`` first on ``sys.path``."""
    module_name, _, qualname = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        # code/ holds the directory of the Trial's file, so a dotted module (pkg.model_def)
        # sits there under its last name.
        short = module_name.rpartition(".")[2]
        if short == module_name or not (code_dir / f"{short}.py").exists():
            raise
        module = importlib.import_module(short)
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


@contextlib.contextmanager
def trial_class_from_code(code_dir: Path, spec: str) -> Iterator[Any]:
    """The class, through ``import_from_path`` as Determined loads a checkpoint: while the block
    runs the checkpoint's modules win (the Trial's own imports included); afterwards they are
    forgotten and the caller's same-named modules are back."""
    _check_code_dir(code_dir)
    with import_from_path(code_dir):
        yield _import_spec(code_dir, spec)


def import_trial_class(code_dir: Path, spec: str) -> Any:
    """The class ``module:qualname`` from ``code_dir``, left imported (its copy wins over a
    same-named module imported from elsewhere)."""
    _check_code_dir(code_dir)
    module_name = spec.partition(":")[0]
    sys.path.insert(0, str(code_dir))
    try:
        cached = sys.modules.get(module_name)
        cached_file = getattr(cached, "__file__", None) or ""
        if cached is not None and not Path(cached_file).resolve().is_relative_to(
            code_dir.resolve()
        ):
            # Same module name imported from elsewhere: load the checkpoint's copy instead.
            del sys.modules[module_name]
        return _import_spec(code_dir, spec)
    finally:
        sys.path.remove(str(code_dir))
