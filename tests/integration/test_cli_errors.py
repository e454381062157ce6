"""Bad configs and bad CLI input: one clear 'trialkit: error:' line, exit code 2, no traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .conftest import EXAMPLES, TRIALKIT, Master

pytestmark = pytest.mark.integration
CORE = EXAMPLES / "core_api"


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TRIALKIT, *args], capture_output=True, text=True, timeout=60, env=env)


def _assert_clean_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.stderr.startswith("trialkit: error: ")
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("yaml_text", "needles"),
    [
        (
            "searcher: {name: random, metric: x, max_trails: 3, max_length: 5}\nentrypoint: python3 t.py\n",
            ["searcher.max_trails: unknown key; did you mean max_trials?"],
        ),
        (
            "searcher: {name: single}\nresources: {slots_per_trial: two}\n",
            ["resources.slots_per_trial"],
        ),
        ("searcher: {name: single\n", ["line"]),
        (
            "hyperparameters: {lr: {type: flaot}}\nsearcher: {name: single}\n",
            ["hyperparameters.lr.type"],
        ),
    ],
)
def test_bad_config_is_one_clear_error(tmp_path: Path, yaml_text: str, needles: list[str]) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml_text)
    _assert_clean_error(_run(["experiment", "create", str(cfg), str(CORE), "--dry-run"]), *needles)


def test_missing_files_and_bad_arguments(tmp_path: Path) -> None:
    _assert_clean_error(
        _run(["experiment", "create", str(tmp_path / "nope.yaml"), "."]), "nope.yaml"
    )
    _assert_clean_error(
        _run(
            [
                "experiment",
                "create",
                str(CORE / "1_metrics.yaml"),
                str(tmp_path / "nodir"),
                "--dry-run",
            ]
        ),
        "nodir",
    )
    _assert_clean_error(_run(["experiment", "describe", "not-a-number"]), "not-a-number")
    _assert_clean_error(_run(["experiment", "frobnicate"]), "frobnicate")
    _assert_clean_error(
        _run(
            [
                "experiment",
                "create",
                str(CORE / "1_metrics.yaml"),
                str(CORE),
                "--config",
                "searcher.max_length",
            ]
        ),
        "searcher.max_length",
    )


def test_dry_run_validates_without_creating(tmp_path: Path) -> None:
    proc = _run(["experiment", "create", str(CORE / "3_hpsearch.yaml"), str(CORE), "--dry-run"])
    assert proc.returncode == 0 and "is valid" in proc.stdout


def test_model_dir_over_the_limit_names_the_big_files(tmp_path: Path) -> None:
    (tmp_path / "1_metrics.py").write_text("print(1)\n")  # the entrypoint of 1_metrics.yaml
    (tmp_path / "data.bin").write_bytes(b"\0" * (97 * 2**20))
    proc = _run(["experiment", "create", str(CORE / "1_metrics.yaml"), str(tmp_path), "--dry-run"])
    _assert_clean_error(proc, "data.bin", ".trialkitignore")
    (tmp_path / ".trialkitignore").write_text("*.bin\n")
    assert (
        _run(
            ["experiment", "create", str(CORE / "1_metrics.yaml"), str(tmp_path), "--dry-run"]
        ).returncode
        == 0
    )


def test_unknown_ids_and_unrunnable_configs_via_master(master: Master, tmp_path: Path) -> None:
    _assert_clean_error(
        master.cli("experiment", "describe", "999", check=False), "experiment 999 not found"
    )
    _assert_clean_error(master.cli("trial", "logs", "999", check=False), "trial 999 not found")
    _assert_clean_error(
        master.cli("checkpoint", "describe", "nope", check=False),
        "no checkpoint UUID starts with 'nope'",
    )
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: x\nentrypoint: model_def:MyTrial\nsearcher: {name: single, metric: x}\n")
    _assert_clean_error(
        master.cli("experiment", "create", str(cfg), str(CORE), check=False), "entrypoint"
    )
    cfg.write_text(
        "name: x\nentrypoint: python3 0_start.py\nsearcher: {name: single, metric: x}\nresources: {slots_per_trial: 8}\n"
    )
    _assert_clean_error(
        master.cli("experiment", "create", str(cfg), str(CORE), check=False), "slots_per_trial"
    )


def test_preview_shows_the_reference_3_hpsearch_brackets() -> None:
    import json

    proc = _run(
        ["experiment", "preview", str(CORE / "3_hpsearch.yaml"), "--json",
         "--config", "searcher.name=adaptive_asha", "--config", "searcher.max_trials=10",
         "--config", "searcher.max_concurrent_trials=16"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    trials = json.loads(proc.stdout)
    firsts = [t["lengths"][0] for t in trials]
    # Reference §7.6.12: bracket A 7 trials at 25 (created first), bracket B 3 trials at 100.
    assert firsts == [25] * 7 + [100] * 3
    assert 1 <= sum(t["lengths"] == [25, 100] for t in trials[:7]) <= 4
