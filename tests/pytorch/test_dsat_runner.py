"""Issue 32 item 11, around the search: ``--run-full-experiment``'s config, what of a
``--search-runner-config`` trialkit honours (and the one-line refusals), the runner's restarts,
and the Hugging Face helper ``get_hf_args_with_overwrites``. Pure; the end-to-end runs are in
tests/deepspeed/test_dsat.py."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")  # trialkit.pytorch imports torch

from trialkit._alias import BOOT_DIR  # noqa: E402
from trialkit.pytorch import dsat  # noqa: E402
from trialkit.pytorch.dsat._full_experiment import full_experiment_config  # noqa: E402
from trialkit.pytorch.dsat._run import run_with_restarts  # noqa: E402
from trialkit.pytorch.dsat._search_runner_config import search_runner_restarts  # noqa: E402

from .test_dsat import Cluster, _config, _method, write_model_dir  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    return write_model_dir(tmp_path)


# --run-full-experiment -------------------------------------------------------------------------


def test_full_experiment_is_the_submitted_config_with_the_best_hparams(model_dir: Path) -> None:
    method = _method("binary", model_dir, max_concurrent_trials=1, max_trials=6, zero_stages=[2])
    Cluster(method, capacity={2: 50}).run()
    best = method.trial_tracker.best_trial
    assert best is not None
    submitted = {**_config(), "name": "bert", "description": "mine",
                 "searcher": {"name": "single", "metric": "loss", "max_length": 1000}}  # fmt: skip
    config = full_experiment_config(submitted, best.hparams, 7)
    hparams = config["hyperparameters"]
    assert "_use_dsat_mode" not in hparams and hparams["lr"] == 0.1
    overwrite = hparams["overwrite_deepspeed_args"]
    assert "autotuning" not in overwrite
    assert overwrite["zero_optimization"] == best.ds_config["zero_optimization"]
    assert overwrite["train_micro_batch_size_per_gpu"] == best.mbs
    assert overwrite["train_batch_size"] == best.mbs * 2 * 2  # mbs × gas × slots
    assert config["searcher"] == submitted["searcher"] and config["name"] == "bert"
    assert config["description"] == "dsat best config (experiment 7) - mine"
    assert "autotuning" in best.hparams["overwrite_deepspeed_args"]  # the trial's own are intact


# --search-runner-config ------------------------------------------------------------------------

#: What Determined writes for its search runner (DEFAULT_SEARCH_RUNNER_CONFIG, named).
DETERMINED_RUNNER = {
    "name": "(DSAT) bert",
    "searcher": {"name": "single", "max_length": 0},
    "max_restarts": 2,
    "resources": {"slots_per_trial": 0},
    "entrypoint": "python3 -m determined.pytorch.dsat._run_dsat",
    "hyperparameters": {"max_trials": 64},
}


def test_a_search_runner_config_gives_the_restarts() -> None:
    assert search_runner_restarts(DETERMINED_RUNNER, 5) == 2
    without = {k: v for k, v in DETERMINED_RUNNER.items() if k != "max_restarts"}
    assert search_runner_restarts(without, 5) == 5
    assert search_runner_restarts({"max_restarts": 0}, 5) == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"workspace": "w", "project": "p"}, "workspace"),
        ({"resources": {"slots_per_trial": 1}}, "resources.slots_per_trial"),
        ({"resources": {"slots_per_trial": 0, "resource_pool": "gpu"}}, "resources.resource_pool"),
        ({"searcher": {"name": "random"}}, "searcher.name"),
        ({"entrypoint": "python3 my_runner.py"}, "entrypoint"),
        ({"max_restarts": -1}, "max_restarts"),
        ({"environment": {"image": "x"}}, "environment"),
    ],
)
def test_what_cannot_be_honoured_is_refused_naming_the_field(
    change: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValueError) as e:
        search_runner_restarts({**DETERMINED_RUNNER, **change}, 5)
    message = str(e.value)
    assert message.startswith(f"--search-runner-config: {field}: ") and "\n" not in message
    assert "runs the search in this process" in message


def test_the_cli_refuses_a_search_runner_config_in_one_line(
    model_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "runner.yaml").write_text("max_restarts: 1\nworkspace: research\n")
    (tmp_path / "exp.yaml").write_text(json.dumps(_config()))
    proc = subprocess.run(
        [sys.executable, "-m", "determined.pytorch.dsat", "binary", "exp.yaml", str(model_dir),
         "--search-runner-config", "runner.yaml"],
        env={**os.environ, "PYTHONPATH": f"{BOOT_DIR}{os.pathsep}{SRC}"},
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: --search-runner-config: workspace: not supported; trialkit's dsat runs the search"
        " in this process, not as an experiment (see docs/deepspeed.md)"
    ]
    assert not (tmp_path / "dsat_searcher_dir").exists()  # nothing was started


def test_the_search_runner_is_restarted_up_to_max_restarts() -> None:
    calls: list[int] = []

    def flaky(failures: int) -> Any:
        def run() -> int:
            calls.append(1)
            if len(calls) <= failures:
                raise ConnectionError(f"master gone ({len(calls)})")
            return 42

        return run

    assert run_with_restarts(flaky(2), restarts=2) == 42 and len(calls) == 3
    calls.clear()
    with pytest.raises(ConnectionError, match=r"master gone \(2\)"):
        run_with_restarts(flaky(2), restarts=1)
    assert len(calls) == 2


# get_hf_args_with_overwrites -------------------------------------------------------------------


def _hf_parser() -> argparse.ArgumentParser:
    """The TrainingArguments flags the helper touches, parsed as HfArgumentParser would."""
    p = argparse.ArgumentParser()
    p.add_argument("--deepspeed")
    p.add_argument("--output_dir")
    p.add_argument("--per_device_train_batch_size", type=int, default=8)
    p.add_argument("--gradient_accumulation_steps", type=int, default=1)
    return p


@pytest.fixture
def ds_file(tmp_path: Path) -> Path:
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto",
                                "gradient_accumulation_steps": "auto", "bf16": {"enabled": True}}))  # fmt: skip
    return path


def test_hf_args_take_the_trials_batch_sizes_and_the_file_its_overwrites(ds_file: Path) -> None:
    hparams = {
        "deepspeed_config": "ds.json",
        "overwrite_deepspeed_args": {"train_micro_batch_size_per_gpu": 16,
                                     "gradient_accumulation_steps": 2,
                                     "zero_optimization": {"stage": 2}},
    }  # fmt: skip
    args = ["--deepspeed", str(ds_file), "--per_device_train_batch_size", "4", "--output_dir", "o"]
    out = dsat.get_hf_args_with_overwrites(args, hparams)
    parsed = _hf_parser().parse_args(out)
    assert (parsed.per_device_train_batch_size, parsed.gradient_accumulation_steps) == (16, 2)
    assert args[3] == "4"  # the caller's list is not changed
    assert json.loads(ds_file.read_text()) == {
        "train_micro_batch_size_per_gpu": 16, "gradient_accumulation_steps": 2,
        "bf16": {"enabled": True}, "zero_optimization": {"stage": 2},
    }  # fmt: skip
    # The --flag=value spelling is rewritten in place.
    out = dsat.get_hf_args_with_overwrites(
        ["--deepspeed", str(ds_file), "--per_device_train_batch_size=4"], hparams
    )
    assert out[2] == "--per_device_train_batch_size=16"
    assert _hf_parser().parse_args(out).per_device_train_batch_size == 16


def test_hf_args_leave_auto_to_hugging_face_and_need_deepspeed(ds_file: Path) -> None:
    auto = {"overwrite_deepspeed_args": {"zero_optimization": {"stage": 3}}}
    args = ["--deepspeed", str(ds_file), "--output_dir", "o"]
    assert dsat.get_hf_args_with_overwrites(args, auto) == args  # "auto" is not copied
    assert json.loads(ds_file.read_text())["zero_optimization"] == {"stage": 3}
    before = ds_file.read_text()
    assert dsat.get_hf_args_with_overwrites(args, {"deepspeed_config": "ds.json"}) == args
    assert ds_file.read_text() == before  # no overwrites: nothing rewritten
    with pytest.raises(ValueError, match="no --deepspeed"):
        dsat.get_hf_args_with_overwrites(["--output_dir", "o"], auto)


# Determined's other public helpers of det.pytorch.dsat ------------------------------------------


def test_determineds_helper_names() -> None:
    ds = {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": "auto"}
    assert dsat.get_batch_config_from_mbs_gas_and_slots(ds, slots=4) == {
        "train_batch_size": 32, "train_micro_batch_size_per_gpu": 8,
        "gradient_accumulation_steps": 1,
    }  # fmt: skip
    assert dsat.smaller_is_better("latency") and not dsat.smaller_is_better("throughput")
    args = dsat.get_full_parser().parse_args(["random", "c.yaml", ".", "--early-stopping", "3"])
    assert (args.search_method, args.early_stopping, args.max_trials) == ("random", 3, 64)
