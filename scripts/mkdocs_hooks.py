"""MkDocs hook: replace ``<!-- generated: NAME -->`` in a page with scripts/docs_gen.py's NAME."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_gen import GENERATORS  # noqa: E402

_MARK = re.compile(r"<!-- generated: ([\w-]+) -->")


def _render(match: re.Match[str]) -> str:
    name = match.group(1)
    if name not in GENERATORS:
        raise ValueError(f"<!-- generated: {name} -->: unknown; use one of {sorted(GENERATORS)}")
    return GENERATORS[name]()


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return _MARK.sub(_render, markdown)
