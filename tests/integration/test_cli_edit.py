"""``trialkit e label add|remove`` and ``e set description`` (and ``det e label``, ``det e set
description``), run as a user would against a real master: what the master stores, what the
CLI prints, and one line for a refusal (the route's own message)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Master, write_script

pytestmark = pytest.mark.integration

CONFIG = {
    "name": "edited",
    "entrypoint": "python3 noop.py",
    "hyperparameters": {},
    "searcher": {"name": "single", "metric": "loss", "max_length": 1},
    "max_restarts": 0,
}


@pytest.fixture
def experiment(master: Master, tmp_path: Path) -> str:
    model = tmp_path / "model"
    write_script(model, "noop.py", "print('done')\n")
    exp = master.create(CONFIG, model)
    master.wait_state(exp, {"COMPLETED"})
    return str(exp)


def _stored(master: Master, exp: str) -> tuple[list[str], str | None]:
    e = master.describe(int(exp))["experiment"]
    return e["labels"], e["description"]


def _det(master: Master, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trialkit.cli._det", *args],
        env=master.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_labels_are_added_once_and_removed(master: Master, experiment: str) -> None:
    out = master.cli("e", "label", "add", experiment, "best", "lr-sweep", "best").stdout
    assert out == f"experiment {experiment}: labels best, lr-sweep\n"
    assert _stored(master, experiment) == (["best", "lr-sweep"], None)
    master.cli("e", "label", "add", "edited", "lr-sweep", "v2")  # by name; kept once
    assert _stored(master, experiment)[0] == ["best", "lr-sweep", "v2"]

    removed = master.cli("experiment", "label", "remove", experiment, "best", "absent")
    assert removed.stdout == f"experiment {experiment}: labels lr-sweep, v2\n"
    assert removed.stderr == f"experiment {experiment} has no label 'absent'\n"
    assert _stored(master, experiment)[0] == ["lr-sweep", "v2"]
    assert "labels: lr-sweep, v2" in master.cli("e", "describe", experiment).stdout


def test_description_is_set_and_cleared(master: Master, experiment: str) -> None:
    out = master.cli("e", "set", "description", experiment, "lr 0.1, no warmup").stdout
    assert out == f"experiment {experiment}: description 'lr 0.1, no warmup'\n"
    assert _stored(master, experiment) == ([], "lr 0.1, no warmup")
    assert "description: lr 0.1, no warmup" in master.cli("e", "describe", experiment).stdout
    cleared = master.cli("e", "set", "description", experiment, "").stdout
    assert cleared == f"experiment {experiment}: no description\n"
    assert _stored(master, experiment) == ([], None)


def test_det_spellings_edit_the_same(master: Master, experiment: str) -> None:
    assert _det(master, "e", "label", "add", experiment, "from-det").returncode == 0
    assert _det(master, "e", "set", "description", experiment, "said by det").returncode == 0
    assert _stored(master, experiment) == (["from-det"], "said by det")
    assert _det(master, "e", "label", "remove", experiment, "from-det").returncode == 0
    assert _stored(master, experiment) == ([], "said by det")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("e", "label", "add", "999", "x"), "trialkit: error: experiment 999 not found"),
        (("e", "label", "remove", "999", "x"), "trialkit: error: experiment 999 not found"),
        (("e", "set", "description", "999", "x"), "trialkit: error: experiment 999 not found"),
        (
            ("e", "label", "add", "{exp}", "x" * 256),
            "trialkit: error: body.labels.0: String should have at most 255 characters",
        ),
    ],
)
def test_refusals_are_one_line(
    master: Master, experiment: str, args: tuple[str, ...], says: str
) -> None:
    proc = master.cli(*(a.format(exp=experiment) for a in args), check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [says]
    assert _stored(master, experiment) == ([], None)  # nothing written
