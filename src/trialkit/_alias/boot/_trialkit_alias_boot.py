"""Turns on trialkit's ``determined`` alias at interpreter start, at almost no cost: a stand-in
finder imports trialkit only when something imports ``determined``. Imported by this
directory's ``sitecustomize`` (processes trialkit starts) or by the ``.pth`` file that
``trialkit alias install`` writes next to a copy of this module."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself costs milliseconds at every interpreter start
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

    from trialkit._alias import DeterminedAliasFinder


class LazyDeterminedAliasFinder:
    """Hands ``determined`` imports to ``trialkit._alias.DeterminedAliasFinder``."""

    _trialkit_determined_alias = True  # the real finder skips us when it looks for Determined

    def __init__(self) -> None:
        self._real: DeterminedAliasFinder | None = None

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        if fullname != "determined" and not fullname.startswith("determined."):
            return None
        if self._real is None:
            try:
                from trialkit._alias import DeterminedAliasFinder
            except ImportError:  # an interpreter without trialkit: nothing to alias
                return None
            self._real = DeterminedAliasFinder()
        return self._real.find_spec(fullname, path, target)


def _install() -> None:
    switch = os.environ.get("TRIALKIT_DETERMINED_ALIAS", "1").strip().lower()
    if switch in ("0", "false", "no", "off"):
        return
    if not any(getattr(f, "_trialkit_determined_alias", False) for f in sys.meta_path):
        sys.meta_path.insert(0, LazyDeterminedAliasFinder())


_install()
