"""Extract the fenced code blocks of a docs page, with the test marks written before them.

A mark is an HTML comment on the line before a fence (invisible on the site):
``<!-- test: file NAME -->`` writes the block to NAME in the page's work directory;
``<!-- test: master -->`` runs a shell block's trialkit commands against a real master;
``<!-- test: repo -->`` runs a shell block from the repository root;
``<!-- test: torch -->`` / ``<!-- test: tf -->`` needs that framework (skipped without it);
``<!-- test: ray -->`` starts or stops Ray nodes: tests/ray runs it (skipped here);
``<!-- test: skip WHY -->`` does not run the block (counted: keep them few).
A block whose only line is ``--8<-- "PATH"`` shows the repository file PATH (pymdownx.snippets)
and stands for that file's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
_FENCE = re.compile(r"^(```+)\s*([\w+-]*)[^\n]*$")
_MARK = re.compile(r"^<!-- test: (.*?) -->$")
_SNIPPET = re.compile(r'^--8<-- "([^"]+)"$')
_FLAGS = {"master", "repo", "torch", "tf", "ray"}


@dataclass
class Block:
    page: str
    line: int
    lang: str
    text: str
    file: str | None = None
    skip: str | None = None
    flags: set[str] = field(default_factory=set)
    snippet: str | None = None

    @property
    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"


def _apply_mark(block: Block, mark: str) -> None:
    words = mark.split()
    if words[0] == "skip":
        if len(words) < 2:
            raise ValueError(f"{block.where}: 'test: skip' needs a reason")
        block.skip = " ".join(words[1:])
        return
    while words:
        word = words.pop(0)
        if word == "file" and words:
            block.file = words.pop(0)
        elif word in _FLAGS:
            block.flags.add(word)
        else:
            raise ValueError(f"{block.where}: unknown test mark {word!r} in {mark!r}")


def blocks(page: str) -> list[Block]:
    """The page's code blocks in order, with their marks and snippet files resolved."""
    lines = (DOCS / page).read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i].strip())
        if not opening:
            i += 1
            continue
        fence, lang = opening.group(1), opening.group(2)
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == fence)
        body = [line[len(lines[i]) - len(lines[i].lstrip()) :] for line in lines[i + 1 : end]]
        block = Block(page, i + 1, lang, "\n".join(body) + "\n")
        mark = _MARK.match(lines[i - 1].strip()) if i else None
        if mark:
            _apply_mark(block, mark.group(1))
        snippet = _SNIPPET.match(block.text.strip())
        if snippet:
            block.snippet = snippet.group(1)
            block.text = (REPO / block.snippet).read_text()
            block.file = block.file or Path(block.snippet).name
        found.append(block)
        i = end + 1
    return found


def guide_pages() -> list[str]:
    """Every page of the site except the generated references (drafts are not on the site)."""
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    return [p for p in pages if not p.startswith(("reference/", "drafts/"))]
