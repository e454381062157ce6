"""How this trialkit was installed, so that advice to install it elsewhere names the same source:
a source checkout (editable), a wheel or other direct URL (PEP 610's ``direct_url.json``), or
the package index."""

from __future__ import annotations

import importlib.metadata
import json
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import trialkit


def pip_install_command(python: str) -> str:
    """``<python> -m pip install <what installs this trialkit>``."""
    return f"{shlex.quote(python)} -m pip install {install_target()}"


def install_target() -> str:
    """pip's argument that installs this trialkit: ``-e <checkout>`` when it runs from a source
    checkout, the wheel or URL it was installed from, else ``trialkit`` from the index."""
    checkout = _running_checkout()
    if checkout is not None:
        return f"-e {shlex.quote(str(checkout))}"
    try:
        text = importlib.metadata.distribution("trialkit").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        text = None
    try:
        info = json.loads(text) if text else None
    except ValueError:
        info = None
    return target_from_direct_url(info) if isinstance(info, dict) else "trialkit"


def target_from_direct_url(info: dict[str, Any]) -> str:
    """pip's argument for a PEP 610 ``direct_url.json``: ``-e PATH`` for an editable directory,
    the path of a local wheel or directory, ``vcs+URL@commit`` for a VCS checkout, else the URL."""
    url = str(info.get("url") or "")
    if not url:
        return "trialkit"
    parsed = urlparse(url)
    local = unquote(parsed.path) if parsed.scheme == "file" else None
    if local is not None and (info.get("dir_info") or {}).get("editable"):
        return f"-e {shlex.quote(local)}"
    if local is not None:
        return shlex.quote(local)
    vcs = info.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs"):
        commit = f"@{vcs['commit_id']}" if vcs.get("commit_id") else ""
        return shlex.quote(f"{vcs['vcs']}+{url}{commit}")
    return shlex.quote(url)


def _running_checkout() -> Path | None:
    """The source checkout this trialkit's code is imported from (``<root>/src/trialkit``, with
    trialkit's ``pyproject.toml`` in ``<root>``), or None for an installed copy."""
    root = Path(trialkit.__file__).resolve().parent.parent.parent
    pyproject = root / "pyproject.toml"
    try:
        named = 'name = "trialkit"' in pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if named else None
