"""Import the Trial class a checkpoint names (``trial_cls_spec``) from its ``code/`` copy; shared
by the PyTorch and Keras loaders, framework-free."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any


def import_trial_class(code_dir: Path, spec: str) -> Any:
    """The class ``module:qualname`` from ``code_dir`` (its copy wins over a same-named module
    imported from elsewhere)."""
    module_name, _, qualname = spec.partition(":")
    if not code_dir.is_dir():
        raise RuntimeError(f"{code_dir} is missing: pass the Trial class as trial_class=")
    sys.path.insert(0, str(code_dir))
    try:
        cached = sys.modules.get(module_name)
        cached_file = getattr(cached, "__file__", None) or ""
        if cached is not None and not Path(cached_file).resolve().is_relative_to(
            code_dir.resolve()
        ):
            # Same module name imported from elsewhere: load the checkpoint's copy instead.
            del sys.modules[module_name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            # code/ holds the directory of the Trial's file, so a dotted module (pkg.model_def)
            # sits there under its last name.
            short = module_name.rpartition(".")[2]
            if short == module_name or not (code_dir / f"{short}.py").exists():
                raise
            module = importlib.import_module(short)
    finally:
        sys.path.remove(str(code_dir))
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj
