"""Issue 32 item 11 end to end: ``python -m trialkit.pytorch.dsat`` (and ``determined.pytorch.dsat``
through the alias) against a real master, on CPU, with examples/deepspeed_autotune. The profiling
trial runs DeepSpeed's model-info profile and the search trials its flops profiler for real; the
best config written is one a search trial ran, with that trial's metrics; with
``--run-full-experiment`` the best config then trains as an experiment of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deepspeed")

from tests.integration.conftest import EXAMPLES, Master
from trialkit._alias import BOOT_DIR
from trialkit.pytorch import dsat

pytestmark = pytest.mark.integration
SRC = Path(__file__).resolve().parents[2] / "src"
#: The example's model: Linear(16, 64) + Linear(64, 1), every parameter trainable.
NUM_PARAMS = 16 * 64 + 64 + 64 + 1


def _no_stale_extension_lock() -> None:
    """A build of DeepSpeed's shm op killed midway leaves torch's ``lock`` file behind, and every
    later DeepSpeed process on the CPU waits on it forever: fail at once, saying which file."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    lock = Path(root or "/nonexistent") / "deepspeed_shm_comm" / "lock"
    if lock.exists():
        pytest.fail(f"stale {lock}: no build is running? remove it (it blocks DeepSpeed's init)")


def _run_dsat(
    master: Master, tmp_path: Path, module: str, method: str, config: str, *options: str
) -> Path:
    """``python -m <module> <method> <example>/<config> <example> <options>`` in
    ``tmp_path/run`` against ``master``; the searcher's method directory. Prints the wall time."""
    _no_stale_extension_lock()
    model_dir = tmp_path / "model"
    shutil.copytree(EXAMPLES / "deepspeed_autotune", model_dir)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {**master.env, "PYTHONPATH": f"{BOOT_DIR}{os.pathsep}{SRC}"}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", module, method, str(model_dir / config), str(model_dir), *options],
        env=env, cwd=run_dir, capture_output=True, text=True, timeout=420,
    )  # fmt: skip
    print(f"{module} {method} {config} {' '.join(options)}: {time.monotonic() - start:.0f} s")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Created experiment 1" in proc.stdout, proc.stdout
    return run_dir / "dsat_searcher_dir" / "method"


def _check_best_is_a_trial_it_ran(master: Master, method_dir: Path) -> dict[str, Any]:
    """The profile trial reported DeepSpeed's model info; best_ds_config.json is the config of
    the search trial with the highest FLOPS_per_gpu, best_ds_metrics.json its metrics. Returns
    that trial."""
    desc = master.describe(1)
    assert desc["experiment"]["state"] == "COMPLETED", desc["experiment"]
    profile, *searched = sorted(desc["trials"], key=lambda t: t["id"])
    info = profile["latest_validation"]["values"]
    assert (info["num_params"], info["trainable_num_params"]) == (NUM_PARAMS, NUM_PARAMS)
    assert info["gpu_mem"] > 0 and info["activation_mem_per_gpu"] >= 0
    ran = [t for t in searched if t["latest_validation"]]
    assert ran and all(t["state"] == "COMPLETED" for t in searched), searched
    best = max(ran, key=lambda t: t["latest_validation"]["values"]["FLOPS_per_gpu"])
    metrics = best["latest_validation"]["values"]
    assert {"throughput", "latency", "FLOPS_per_gpu"} <= set(metrics)
    assert json.loads((method_dir / dsat.BEST_METRICS_FILE).read_text()) == metrics
    expected = dsat.get_ds_config_from_hparams(best["hparams"], EXAMPLES / "deepspeed_autotune")
    expected.pop("autotuning")
    written = json.loads((method_dir / dsat.BEST_CONFIG_FILE).read_text())
    assert written == expected
    assert (
        written["train_micro_batch_size_per_gpu"]
        == best["hparams"]["overwrite_deepspeed_args"]["train_micro_batch_size_per_gpu"]
    )
    return best  # type: ignore[no-any-return]


def test_core_api_script_is_profiled_searched_and_its_best_config_written(
    master: Master, tmp_path: Path
) -> None:
    method_dir = _run_dsat(
        master, tmp_path, "trialkit.pytorch.dsat", "random", "autotune.yaml",
        "--max-trials", "2", "--max-concurrent-trials", "1",
    )  # fmt: skip
    _check_best_is_a_trial_it_ran(master, method_dir)


def test_deepspeed_trial_under_determined_name_then_the_full_experiment(
    master: Master, tmp_path: Path
) -> None:
    method_dir = _run_dsat(
        master, tmp_path, "determined.pytorch.dsat", "binary", "autotune_trial.yaml",
        "--max-trials", "3", "--max-concurrent-trials", "1", "--run-full-experiment",
    )  # fmt: skip
    best = _check_best_is_a_trial_it_ran(master, method_dir)
    full = master.wait_state(2, {"COMPLETED", "ERROR", "CANCELED"}, timeout=180)
    assert full["experiment"]["state"] == "COMPLETED", master.cli("trial", "logs", "4").stdout
    wanted = json.loads(json.dumps(best["hparams"]))
    del wanted["_use_dsat_mode"], wanted["overwrite_deepspeed_args"]["autotuning"]
    [trial] = full["trials"]
    assert trial["hparams"] == wanted
    assert full["experiment"]["config"]["searcher"]["name"] == "single"
    assert trial["latest_validation"]["steps_completed"] == 20  # the submitted length
