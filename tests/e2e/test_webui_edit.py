"""An experiment's description and labels, edited on a real master: through its PATCH route
(bounded, authenticated like every route, the web UI's cookie only with the UI's header) and in
the web UI (edited in place, shown in the experiments list, markup kept as text)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from ._browser import browser, open_ui
from ._experiments import XSS, config, run_experiment
from .conftest import Master

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def _patch(master: Master, exp: int, body: Any, **headers: str) -> httpx.Response:
    return httpx.patch(
        f"{master.client.url}/api/v1/experiments/{exp}",
        json=body,
        headers=headers or {"Authorization": f"Bearer {master.client.token}"},
        trust_env=False,
        timeout=30,
    )


def test_patch_sets_description_and_labels_within_bounds(master: Master, model: Path) -> None:
    [trial] = run_experiment(master, model, config("edit", {"lr": 0.1}, {"name": "single"}))
    exp = trial["experiment_id"]
    reply = _patch(master, exp, {"description": "first try", "labels": ["a", " b ", "a"]})
    assert reply.status_code == 200, reply.text
    assert reply.json()["experiment"]["labels"] == ["a", "b"]  # trimmed, each once
    # A field left out is kept; the change is what describe shows from now on.
    assert _patch(master, exp, {"labels": ["c"]}).status_code == 200
    described = master.describe(exp)["experiment"]
    assert (described["description"], described["labels"]) == ("first try", ["c"])
    assert described["config"]["description"] is None  # the config keeps what it was created with
    assert _patch(master, exp, {"description": ""}).json()["experiment"]["description"] is None

    for bad in (
        {"labels": [""]},
        {"labels": ["x" * 256]},
        {"labels": [str(i) for i in range(101)]},
        {"description": "x" * 10_001},
        {"labels": "a"},
        {"name": "renamed"},  # only the description and labels are editable
    ):
        assert _patch(master, exp, bad).status_code == 422, bad
    surrogate = httpx.patch(  # valid JSON, not UTF-8: refused, not a store failure
        f"{master.client.url}/api/v1/experiments/{exp}",
        content=b'{"description": "\\ud800"}',
        headers={
            "Authorization": f"Bearer {master.client.token}",
            "Content-Type": "application/json",
        },
        trust_env=False,
    )
    assert surrogate.status_code == 422, surrogate.text
    assert _patch(master, exp + 1, {"labels": []}).status_code == 404
    assert _patch(master, exp, {"labels": []}, Authorization="Bearer wrong").status_code == 401
    assert master.describe(exp)["experiment"]["labels"] == ["c"]


def test_description_and_labels_edited_in_the_web_ui(master: Master, model: Path) -> None:
    [trial] = run_experiment(master, model, config("labelled", {"lr": 0.1}, {"name": "single"}))
    exp = trial["experiment_id"]
    with browser() as b:
        page = b.page
        ui = open_ui(b, master)
        page.goto(f"{ui}#/experiments/{exp}")
        page.wait_for_selector("#btn-edit-description")
        assert page.inner_text("#description") == "none"

        page.click("#btn-edit-description")
        page.fill("#description-input", f"lr sweep {XSS}")
        page.click("#btn-save-description")
        page.wait_for_selector("#btn-edit-description")
        assert page.inner_text("#description") == f"lr sweep {XSS}"  # text, not markup

        for label in ("baseline", XSS):
            page.fill("#label-input", label)
            page.press("#label-input", "Enter")
            page.wait_for_function(
                "n => document.querySelectorAll('#labels .label-chip').length === n",
                arg=["baseline", XSS].index(label) + 1,
            )
        page.click(".label-chip[data-label='baseline'] .label-remove")
        page.wait_for_function("document.querySelectorAll('#labels .label-chip').length === 1")
        described = master.describe(exp)["experiment"]
        assert (described["description"], described["labels"]) == (f"lr sweep {XSS}", [XSS])

        # A label too long for the master: the page says why, and keeps what it had.
        page.evaluate("document.querySelector('#label-input').removeAttribute('maxlength')")
        page.fill("#label-input", "x" * 256)
        page.press("#label-input", "Enter")
        assert "422" in page.wait_for_selector("#meta-error:not([hidden])").inner_text()
        assert master.describe(exp)["experiment"]["labels"] == [XSS]

        page.goto(f"{ui}#/")
        page.wait_for_selector("text=labelled")
        assert XSS in page.inner_text("#main table")  # the Labels column
        b.shot("experiment-labels")
        assert page.evaluate("window.__xss") is None
        assert b.errors == [] or all("422" in e for e in b.errors), b.errors


def test_the_web_ui_cookie_edits_only_with_the_ui_header(master: Master, model: Path) -> None:
    [trial] = run_experiment(master, model, config("cookie", {"lr": 0.1}, {"name": "single"}))
    exp = trial["experiment_id"]
    with browser() as b:
        open_ui(b, master)
        cookie = "; ".join(f"{c['name']}={c['value']}" for c in b.page.context.cookies())
    body = {"labels": ["from-a-page"]}
    assert _patch(master, exp, body, Cookie=cookie).status_code == 401  # another page's request
    ok = _patch(master, exp, body, Cookie=cookie, **{"X-Trialkit-UI": "1"})
    assert ok.status_code == 200, ok.text
    assert master.describe(exp)["experiment"]["labels"] == ["from-a-page"]
