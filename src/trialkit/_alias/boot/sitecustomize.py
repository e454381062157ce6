"""Installs trialkit's ``determined`` alias in processes the trialkit master starts, then runs
any other ``sitecustomize`` further along ``sys.path`` (this one must not hide it)."""

import importlib.machinery
import importlib.util
import os
import sys


def _install_alias() -> None:
    try:
        import trialkit._alias
    except ImportError:  # an interpreter without trialkit: nothing to alias
        return
    trialkit._alias.install()


def _chain_next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_install_alias()
_chain_next_sitecustomize()
