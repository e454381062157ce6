"""``trialkit tensorboard``: the real TensorBoard over a finished experiment's event files,
its scalars read back over HTTP."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest

from ..integration.conftest import TRIALKIT, write_script
from .conftest import Master

pytestmark = pytest.mark.integration

TRIAL = """
from trialkit import core

with core.init() as ctx:
    for step in (1, 2, 3):
        ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    ctx.train.report_validation_metrics(steps_completed=3, metrics={"loss": 0.5, "acc": 0.75})
"""

CONFIG = {
    "name": "tb",
    "entrypoint": "python3 trial.py",
    "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 3}},
    "max_restarts": 0,
}


def _serve(master: Master, *args: str) -> tuple[subprocess.Popen[str], str]:
    """Start ``trialkit tensorboard ARGS`` and return it with the URL it printed."""
    proc = subprocess.Popen(
        [*TRIALKIT, "tensorboard", *args],
        env=master.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until it serves (the command waits up to 90 s)
    found = re.search(r"http://127\.0\.0\.1:\d+/", line)
    if not found:
        proc.kill()
        raise AssertionError(f"no URL printed: {line!r} {proc.communicate(timeout=30)}")
    return proc, found[0]


def _tags(url: str) -> dict[str, dict[str, object]]:
    deadline = time.monotonic() + 60
    while True:  # TensorBoard loads the event files in the background after it starts
        tags = httpx.get(url + "data/plugin/scalars/tags", timeout=10, trust_env=False).json()
        if tags or time.monotonic() > deadline:
            return tags  # type: ignore[no-any-return]
        time.sleep(0.5)


def test_tensorboard_serves_the_trials_metrics_by_group(master: Master, tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    model = tmp_path / "model"
    write_script(model, "trial.py", TRIAL)
    exp = master.create(CONFIG, model)
    assert master.wait_state(exp, {"COMPLETED", "ERROR"})["experiment"]["state"] == "COMPLETED"
    trial = master.describe(exp)["trials"][0]["id"]
    proc, url = _serve(master, str(exp))
    try:
        tags = _tags(url)
        run = f"experiment-{exp}/trial-{trial}"
        # Determined's tags: training metrics by name, validation ones with a val_ prefix.
        assert set(tags[run]) == {"loss", "val_loss", "val_acc"}
        # The master (and so its web UI) links to it while it runs.
        listed = master.client.request("GET", f"/api/v1/experiments/{exp}/tensorboards")
        assert listed == {"tensorboards": [{"url": url, "experiment_ids": [exp], "trial_id": None}]}
        scalars = httpx.get(
            url + "data/plugin/scalars/scalars",
            params={"run": run, "tag": "loss"},
            timeout=10,
            trust_env=False,
        ).json()
        assert [(s[1], s[2]) for s in scalars] == [(1, 1.0), (2, 0.5), (3, pytest.approx(1 / 3))]
    finally:
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode in (0, 130, -15, 143)
    # Stopping the command stops the TensorBoard it started.
    gone, alive = psutil.wait_procs(children, timeout=30)
    assert children and alive == []
    assert master.client.request("GET", f"/api/v1/experiments/{exp}/tensorboards") == {
        "tensorboards": []
    }


def test_tensorboard_refuses_what_it_cannot_show(master: Master) -> None:
    bad = master.cli("tensorboard", "999", check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith("trialkit: error:")
    assert "Traceback" not in bad.stderr
