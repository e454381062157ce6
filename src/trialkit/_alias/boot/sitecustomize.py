"""Installs trialkit's ``determined`` alias in processes the trialkit master starts, then runs
any other ``sitecustomize`` further along ``sys.path`` (this one must not hide it)."""

import os
import sys

import _trialkit_alias_boot  # noqa: F401  (installs the alias on import)


def _chain_next_sitecustomize() -> None:
    from importlib.machinery import PathFinder  # (importlib.util would cost milliseconds)

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = type(sys)("sitecustomize")
    module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
    spec.loader.exec_module(module)


_chain_next_sitecustomize()
