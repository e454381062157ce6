"""Advice to install trialkit into another interpreter names the source this one came from."""

from __future__ import annotations

from pathlib import Path

import pytest

import trialkit
from trialkit._install import target_from_direct_url
from trialkit.master.search._create import CreateError, prepare_experiment


def test_create_names_the_checkout_this_trialkit_runs_from(tmp_path: Path) -> None:
    """The tests run trialkit from its source checkout: the advice is an editable install of it,
    not ``pip install trialkit`` (a package that is not published)."""
    no_trialkit = tmp_path / "python-without-trialkit"
    no_trialkit.write_text("#!/bin/sh\nexec /bin/false\n")
    no_trialkit.chmod(0o755)
    checkout = Path(trialkit.__file__).resolve().parents[2]
    raw = {
        "name": "x",
        "entrypoint": "python3 t.py",
        "searcher": {"name": "single", "metric": "loss"},
        "environment": {"python": str(no_trialkit)},
    }
    with pytest.raises(CreateError) as caught:
        prepare_experiment(raw, 2, tmp_path / "home")
    [line] = [e for e in caught.value.errors if e.startswith("environment.python")]
    assert line.endswith(f"install it there: {no_trialkit} -m pip install -e {checkout}"), line


@pytest.mark.parametrize(
    ("direct_url", "target"),
    [
        ({"url": "file:///src/trial%20kit", "dir_info": {"editable": True}}, "-e '/src/trial kit'"),
        (
            {"url": "file:///w/trialkit-0.3-py3-none-any.whl", "archive_info": {}},
            "/w/trialkit-0.3-py3-none-any.whl",
        ),
        (
            {"url": "https://g.example/tk.git", "vcs_info": {"vcs": "git", "commit_id": "ab12"}},
            "git+https://g.example/tk.git@ab12",
        ),
        (
            {"url": "https://files.example/trialkit-0.3.tar.gz", "archive_info": {}},
            "https://files.example/trialkit-0.3.tar.gz",
        ),
        ({}, "trialkit"),
    ],
)
def test_pep_610_direct_urls_become_pip_arguments(direct_url: dict, target: str) -> None:
    assert target_from_direct_url(direct_url) == target
