"""A hung custom searcher delays only its own experiment: under one real master, another
experiment's trials report and complete and the CLI answers while it hangs; then it fails with
its one-line reason once its call timeout runs out."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import EXAMPLES, Master, _run_master, write_script

pytestmark = pytest.mark.integration
CUSTOM = EXAMPLES / "custom_searcher"
CALL_TIMEOUT = 30


@pytest.fixture
def master(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Master]:
    """A master whose custom searchers get ``CALL_TIMEOUT`` seconds per call."""
    monkeypatch.delenv("TRIALKIT_DB", raising=False)
    monkeypatch.setenv("TRIALKIT_SEARCHER_CALL_TIMEOUT", str(CALL_TIMEOUT))
    yield from _run_master(tmp_path / "home", monkeypatch)


def _hanging_project(tmp_path: Path) -> tuple[Path, Path]:
    """The example whose searcher writes a marker, then sleeps in on_validation_completed."""
    d = tmp_path / "hangs"
    shutil.copytree(CUSTOM, d)
    marker = tmp_path / "hung"
    write_script(
        d,
        "hangs.py",
        "import pathlib, time\n"
        "from searcher import HalfwayRandomSearch\n"
        "class Hangs(HalfwayRandomSearch):\n"
        "    def on_validation_completed(self, *args):\n"
        f"        pathlib.Path({str(marker)!r}).write_text('hung')\n"
        "        time.sleep(300)\n"
        "        return []\n",
    )
    cfg = (
        (CUSTOM / "custom_in_master.yaml")
        .read_text()
        .replace("searcher:HalfwayRandomSearch", "hangs:Hangs")
    )
    (d / "hangs.yaml").write_text(cfg)
    return d, marker


RANDOM = {
    "name": "plain-random",
    "entrypoint": "python3 train.py",
    "hyperparameters": {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}},
    "searcher": {
        "name": "random",
        "metric": "loss",
        "max_trials": 2,
        "max_length": {"batches": 10},
    },
    "max_restarts": 0,
}


def test_a_hung_custom_searcher_delays_only_its_own_experiment(
    master: Master, tmp_path: Path
) -> None:
    pid = master.pid()
    project, marker = _hanging_project(tmp_path)
    master.cli(
        "experiment",
        "create",
        str(project / "hangs.yaml"),
        str(project),
        "--config",
        "searcher.custom_searcher_kwargs.max_concurrent=1",
    )
    master.wait_for(marker.exists, timeout=90, what="the custom searcher to hang")
    hung_at = time.monotonic()

    other = master.create(RANDOM, CUSTOM)
    slowest_list = 0.0
    while master.describe(other)["experiment"]["state"] not in {"COMPLETED", "ERROR", "CANCELED"}:
        assert time.monotonic() - hung_at < CALL_TIMEOUT - 2, (
            f"experiment {other} did not end while the custom searcher hung: "
            f"{master.describe(other)}"
        )
        started = time.monotonic()
        listed = master.client.request("GET", "/api/v1/experiments")["experiments"]
        slowest_list = max(slowest_list, time.monotonic() - started)
        assert {e["id"] for e in listed} == {1, other}
        time.sleep(0.5)
    ended = time.monotonic()
    desc = master.describe(other)
    assert desc["experiment"]["state"] == "COMPLETED", desc["experiment"]
    assert [t["state"] for t in desc["trials"]] == ["COMPLETED", "COMPLETED"]
    assert all(t["best_validation"] is not None for t in desc["trials"])  # they reported
    started = time.monotonic()
    listing = master.cli("experiment", "list").stdout
    cli_seconds = time.monotonic() - started
    assert master.describe(1)["experiment"]["state"] == "ACTIVE"  # still hung: its own wait
    assert time.monotonic() - hung_at < CALL_TIMEOUT
    assert "plain-random" in listing and "COMPLETED" in listing
    print(
        f"other experiment ended {ended - hung_at:.1f}s into the hang; slowest experiment list"
        f" {slowest_list:.2f}s; trialkit experiment list {cli_seconds:.2f}s"
    )
    assert slowest_list < 2.0, f"the experiment list took {slowest_list:.1f}s"
    assert cli_seconds < 10.0, f"trialkit experiment list took {cli_seconds:.1f}s"

    hung = master.wait_state(1, {"COMPLETED", "ERROR", "CANCELED"}, timeout=CALL_TIMEOUT + 60)
    error = hung["experiment"]["error"]
    assert hung["experiment"]["state"] == "ERROR"
    assert (
        f"custom searcher Hangs.on_validation_completed: no answer within {CALL_TIMEOUT}s"
        " (its process was killed)" in error
    ), error
    assert "\n" not in error
    assert master.pid() == pid
