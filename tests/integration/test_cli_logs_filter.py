"""``trialkit t logs`` / ``e logs`` with ``--level`` and ``--rank`` (and ``-f``), run as a user
would against a real master, on the log the web UI's browser test filters: the same rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ._ranked_logs import LAUNCH, WORKER
from .conftest import Master, write_script

pytestmark = pytest.mark.integration

CONFIG = {
    "name": "ranked",
    "entrypoint": "python3 launch.py",
    "hyperparameters": {"lr": 0.1},
    "searcher": {"name": "single", "metric": "loss", "max_length": 1},
    "max_restarts": 0,
}


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    write_script(model, "launch.py", LAUNCH)
    write_script(model, "worker.py", WORKER)
    return model


def _ended_trial(master: Master, tmp_path: Path) -> int:
    exp = master.create(CONFIG, _model(tmp_path))
    [trial] = master.wait_state(exp, {"COMPLETED", "ERROR"})["trials"]
    return int(trial["id"])


def _lines(master: Master, *args: str) -> list[str]:
    return master.cli(*args).stdout.splitlines()


def test_a_level_shows_it_and_above_with_an_errors_traceback(
    master: Master, tmp_path: Path
) -> None:
    trial = str(_ended_trial(master, tmp_path))
    everything = _lines(master, "t", "logs", trial)
    assert any("debug from rank 0" in ln for ln in everything)

    shown = _lines(master, "t", "logs", trial, "--level", "warning")
    assert sum("warning from rank" in ln for ln in shown) == 2
    assert any("error from rank 1" in ln for ln in shown)
    assert not any("info from" in ln or "debug from" in ln for ln in shown)
    assert not any("both workers" in ln for ln in shown)  # no level of its own
    assert "[rank=1] || ValueError: bad batch" in shown  # the ERROR's traceback
    assert [ln for ln in everything if ln in shown] == shown  # in order, whole lines
    # With a tail: the last lines that pass the filter (not those passing among the last lines).
    assert _lines(master, "t", "logs", trial, "--level", "warning", "--tail", "3") == shown[-3:]
    [warning] = _lines(master, "t", "logs", trial, "--rank", "0", "--level", "INFO", "--tail", "1")
    assert warning.startswith("[rank=0] || WARNING: ") and warning.endswith("warning from rank 0")

    errors = _lines(master, "t", "logs", trial, "--level", "ERROR", "--rank", "1")
    assert errors[0].startswith("[rank=1] || ERROR: ") and "error from rank 1" in errors[0]
    assert errors[1] == "[rank=1] || Traceback (most recent call last):"
    assert errors[-1] == "[rank=1] || ValueError: bad batch"
    assert all(ln.startswith("[rank=1] || ") for ln in errors)


def test_a_rank_alone_and_the_lines_without_a_rank(master: Master, tmp_path: Path) -> None:
    trial = str(_ended_trial(master, tmp_path))
    rank0 = _lines(master, "t", "logs", trial, "--rank", "0")
    assert [ln.split("|| ", 1)[1].split(": ", 1)[0] for ln in rank0] == ["DEBUG", "INFO", "WARNING"]
    unranked = _lines(master, "t", "logs", trial, "--rank", "none")
    assert "launcher: both workers done" in unranked
    assert not any(ln.startswith("[rank=") for ln in unranked)


def test_experiment_logs_and_det_filter_the_same_way(master: Master, tmp_path: Path) -> None:
    trial = _ended_trial(master, tmp_path)
    mine = _lines(master, "t", "logs", str(trial), "--level", "ERROR", "--rank", "1")
    exp_lines = _lines(master, "e", "logs", "ranked", "--level", "ERROR", "--rank", "1")
    assert exp_lines == [f"[trial {trial}] {ln}" for ln in mine]
    det = subprocess.run(
        [sys.executable, "-m", "trialkit.cli._det", "t", "logs", str(trial), "--level", "ERROR"],
        env=master.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert det.returncode == 0, det.stderr
    assert det.stdout.splitlines() == _lines(master, "t", "logs", str(trial), "--level", "ERROR")


def test_following_filters_the_lines_as_they_come(master: Master, tmp_path: Path) -> None:
    cfg = _model(tmp_path) / "_config.json"
    cfg.write_text(json.dumps(CONFIG))
    exp = master.cli("e", "create", str(cfg), str(cfg.parent)).stdout.split()[-1]
    followed = _lines(master, "e", "logs", exp, "-f", "--level", "WARNING", "--rank", "0")
    assert len(followed) == 1, followed
    assert followed[0].startswith("[trial ") and "] [rank=0] || WARNING: " in followed[0]
    assert followed[0].endswith("warning from rank 0")


def test_a_level_that_does_not_exist_is_one_line(master: Master) -> None:
    bad = master.cli("t", "logs", "1", "--level", "LOUD", check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "trialkit: error: Invalid value for '--level': no log level 'LOUD': one of DEBUG, INFO,"
        " WARNING, ERROR, CRITICAL (see 'trialkit t logs --help')"
    ]
