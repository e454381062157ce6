"""The ``det`` command: Determined's command lines become trialkit's; the rest get one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import paths
from trialkit.cli._det import Unmapped, translate

SRC = paths.SRC


@pytest.mark.parametrize(
    ("det", "trialkit"),
    [
        ("e create const.yaml .", ["experiment create const.yaml ."]),
        (
            "experiment create const.yaml . -f --paused --config searcher.max_trials=2",
            ["experiment create const.yaml . -f --paused --config searcher.max_trials=2"],
        ),
        ("e create const.yaml . --follow-first-trial", ["experiment create const.yaml . -f"]),
        ("e", ["experiment list"]),
        ("e list --all", ["experiment list -a"]),
        ("e ls -a --json", ["experiment list -a --json"]),
        ("e describe 3", ["experiment describe 3"]),
        ("e describe 3,4 --json", ["experiment describe 3 --json", "experiment describe 4 --json"]),
        ("e logs 3 -f --tail 10", ["experiment logs 3 -f --tail 10"]),
        ("e logs 3 --tail=10", ["experiment logs 3 --tail 10"]),
        ("e logs 3 --level WARNING --rank-id 1", ["experiment logs 3 --level WARNING --rank 1"]),
        ("t logs 7 -f --level=ERROR", ["trial logs 7 -f --level ERROR"]),
        ("e label add 3 best", ["experiment label add 3 best"]),
        ("experiment label remove 3 best", ["experiment label remove 3 best"]),
        ("e set description 3 tuned", ["experiment set description 3 tuned"]),
        ("e pause 3", ["experiment pause 3"]),
        ("e activate 3", ["experiment activate 3"]),
        ("e unpause 3", ["experiment activate 3"]),
        ("e kill 3", ["experiment kill 3"]),
        ("e cancel 3", ["experiment kill 3"]),
        ("e lt 3", ["trial list 3"]),
        ("e list-checkpoints 3", ["checkpoint list 3"]),
        ("t describe 7 --json", ["trial describe 7 --json"]),
        ("trial logs 7 -f", ["trial logs 7 -f"]),
        ("checkpoint list 3", ["checkpoint list 3"]),
        ("c ls 3 --json", ["checkpoint list 3 --json"]),
        ("checkpoint describe abcd", ["checkpoint describe abcd"]),
        ("checkpoint download abcd -o out -q", ["checkpoint download abcd -o out"]),
        ("preview-search adaptive.yaml", ["experiment preview adaptive.yaml"]),
        ("-m http://localhost:8080 e list", ["experiment list"]),
        ("--master=http://h:8080 -u admin e kill 2", ["experiment kill 2"]),
    ],
)
def test_det_lines_become_trialkit_lines(det: str, trialkit: list[str]) -> None:
    assert [" ".join(run) for run in translate(det.split())] == trialkit


@pytest.mark.parametrize(
    ("det", "says"),
    [
        ("e create const.yaml . --test-mode", "det.experimental.test_one_batch(MyTrial, config)"),
        ("e create const.yaml", "usage: det e create CONFIG_FILE MODEL_DEF"),
        ("e list --csv", "use --json"),
        ("e download 3", "'trialkit checkpoint list ID', then 'trialkit checkpoint download UUID'"),
        ("e continue 3", "warm-starts from the checkpoint"),
        ("t kill 7", "'det e kill EXPERIMENT_ID'"),
        ("deploy local cluster-up", "'trialkit master up' starts the local master"),
        ("user login admin", "no users"),
        ("notebook start", "not supported by trialkit"),
        ("e logs 3 --head 5", "use --tail N"),
        ("e label 3", "'det e label add|remove ID LABEL'"),
        ("e set weight 3 2", "'det e set description ID TEXT'"),
        ("e label add 3", "usage: det e label add EXPERIMENT_ID LABEL"),
    ],
)
def test_unmapped_commands_say_what_to_use(det: str, says: str) -> None:
    with pytest.raises(Unmapped) as info:
        translate(det.split())
    assert says in str(info.value) and "\n" not in str(info.value)


def _det(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trialkit.cli._det", *args],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_det_command_prints_help_and_one_line_errors() -> None:
    proc = _det()
    assert proc.returncode == 0 and "det preview-search CONFIG" in proc.stdout
    proc = _det("e", "download", "3")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "det: error: 'det e download' has no trialkit equivalent: 'trialkit checkpoint list "
        "ID', then 'trialkit checkpoint download UUID'"
    ]


def test_det_preview_search_runs_trialkit(tmp_path: Path) -> None:
    cfg = tmp_path / "grid.yaml"
    cfg.write_text(
        "entrypoint: python3 train.py\n"
        "hyperparameters:\n  lr: {type: categorical, vals: [0.1, 0.2]}\n"
        "searcher: {name: grid, metric: loss, max_length: {batches: 5}}\n"
    )
    proc = _det("preview-search", str(cfg))
    assert proc.returncode == 0, proc.stderr
    assert "2 trials" in proc.stdout and "lr=0.1" in proc.stdout and "lr=0.2" in proc.stdout


def test_det_is_a_console_script() -> None:
    import tomllib

    pyproject = tomllib.loads((SRC.parent / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["det"] == "trialkit.cli._det:main"
