"""Headless Chromium for the web UI's tests: Debian's /usr/bin/chromium driven by Playwright,
with every console error and page error kept, and screenshots under .artifacts/webui/."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Where screenshots go ($TRIALKIT_ARTIFACTS overrides; CI keeps the folder).
ARTIFACTS = Path(os.environ.get("TRIALKIT_ARTIFACTS", REPO / ".artifacts")) / "webui"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    """The system Chromium (the tests never download a browser)."""
    found = os.environ.get("TRIALKIT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(found).exists():
        pytest.skip("no chromium: run scripts/install_chromium.sh (Debian's chromium package)")
    return found


@dataclass
class Browser:
    page: Any
    errors: list[str] = field(default_factory=list)

    def shot(self, name: str) -> Path:
        """A full-page screenshot, its path printed for the test log."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
        return path


@contextmanager
def browser() -> Iterator[Browser]:
    """A page in a fresh headless Chromium; closed (and the browser stopped) afterwards."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = chromium.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            b = Browser(page)
            page.on("console", lambda m: b.errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: b.errors.append(str(e)))
            try:
                yield b
            except BaseException:
                # What the page showed and said when the test failed, for its log.
                b.shot("failure")
                print(f"console errors: {b.errors}\npage text:\n{page.inner_text('body')[:3000]}")
                raise
        finally:
            chromium.close()


def login_url(master: Any, experiment: str = "") -> str:
    """The login link ``trialkit ui [EXPERIMENT]`` prints (the experiment's page with one)."""
    out = master.cli("ui", "--no-open", *([experiment] if experiment else [])).stdout
    found = re.search(r"http://\S+/ui/login\?code=\S+", out)
    assert found, out
    return found[0]


def open_ui(b: Browser, master: Any, experiment: str = "") -> str:
    """Log ``b`` in with a fresh link and wait for the first page; the UI's address (no hash)."""
    b.page.goto(login_url(master, experiment))
    if not experiment:
        b.page.wait_for_function("document.body.dataset.ready === 'experiments'")
    return str(b.page.url.split("#")[0])
