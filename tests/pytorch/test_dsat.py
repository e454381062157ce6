"""Issue 32 item 11: DeepSpeed Autotune's search methods (``trialkit.pytorch.dsat``, Determined's
``det.pytorch.dsat``) as pure custom searchers, given the profiling trial's numbers. A small
simulated cluster answers each trial: out of memory above a per-stage capacity, else a
throughput that grows with the micro-batch. No DeepSpeed needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")  # the search methods are pure, but trialkit.pytorch imports torch

from trialkit._alias import BOOT_DIR  # noqa: E402
from trialkit.pytorch import dsat  # noqa: E402
from trialkit.searcher import (
    Close,
    Create,
    ExitedReason,
    SearcherState,
    Shutdown,
    ValidateAfter,
)

SRC = Path(__file__).resolve().parents[2] / "src"
MB = 10**6
#: 1M params (all trainable), 1 MB activations per sample, 100 MB device: fp32 + Adam needs
#: 16 MB of weights/grads/optimizer state, sharded by stage over 2 slots.
PROFILE = {
    "num_params": MB,
    "trainable_num_params": MB,
    "activation_mem_per_gpu": MB,
    "gpu_mem": 100 * MB,
}
ESTIMATED_MAX = {0: 83, 1: 87, 2: 89, 3: 91}


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    return write_model_dir(tmp_path)


def write_model_dir(tmp_path: Path) -> Path:
    """A model directory with the DeepSpeed config the trials' hyperparameters name."""
    (tmp_path / "ds_config.json").write_text(
        json.dumps({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
                    "optimizer": {"type": "Adam", "params": {"lr": 0.001}}})
    )  # fmt: skip
    return tmp_path


def _config() -> dict[str, Any]:
    return {
        "entrypoint": "python3 train.py",
        "resources": {"slots_per_trial": 2},
        "hyperparameters": {
            "deepspeed_config": "ds_config.json",
            "lr": 0.1,
            "overwrite_deepspeed_args": {"autotuning": {"enabled": True}},
        },
    }


def _method(name: str, model_dir: Path, **options: Any) -> dsat.BaseDSATSearchMethod:
    args = {"model_dir": str(model_dir), "metric": "throughput", **options}
    return dsat.SEARCH_METHOD_CLASSES[name](args, _config())


class Cluster:
    """Runs the operations of a search: a trial whose micro-batch is over its stage's capacity
    fails (as an OOM does), any other reports throughput = mbs (+ stage bonus)."""

    def __init__(self, method: dsat.BaseDSATSearchMethod, capacity: dict[int, int]) -> None:
        self.method = method
        self.capacity = capacity
        self.state = SearcherState()
        self.pending: list[Any] = []
        self.ran: list[tuple[int, int, bool]] = []  # (stage, mbs, ok) of each search trial
        self.shutdown: Shutdown | None = None
        self.hparams: dict[str, dict[str, Any]] = {}

    def run(self, max_events: int = 500) -> None:
        self.pending = list(self.method.initial_operations(self.state))
        for _ in range(max_events):
            if self.shutdown is not None or not self.pending:
                return
            op = self.pending.pop(0)
            if isinstance(op, Create):
                self.hparams[op.request_id] = op.hparams
                rid = uuid.UUID(op.request_id)
                self.state.trials_created.add(rid)
                self.pending += self.method.on_trial_created(self.state, rid)
            elif isinstance(op, ValidateAfter):
                self._train(op)
            elif isinstance(op, Close):
                rid = uuid.UUID(op.request_id)
                self.state.trials_closed.add(rid)
                self._take(self.method.on_trial_closed(self.state, rid))
            elif isinstance(op, Shutdown):
                self.shutdown = op
        raise AssertionError("the search did not end")

    def _take(self, ops: list[Any]) -> None:
        for op in ops:
            if isinstance(op, Shutdown):
                self.shutdown = op
        self.pending += [op for op in ops if not isinstance(op, Shutdown)]

    def _train(self, op: ValidateAfter) -> None:
        rid = uuid.UUID(op.request_id)
        overwrite = self.hparams[op.request_id]["overwrite_deepspeed_args"]
        if "model_info" in overwrite["autotuning"]:
            assert op.length == 1 and overwrite["train_micro_batch_size_per_gpu"] == 1
            self._take(self.method.on_validation_completed(self.state, rid, PROFILE, 1))
            return
        stage = overwrite["zero_optimization"]["stage"]
        mbs = overwrite["train_micro_batch_size_per_gpu"]
        assert overwrite["train_batch_size"] == mbs * 2 * 2  # mbs × gas × slots
        ok = mbs <= self.capacity[stage]
        self.ran.append((stage, mbs, ok))
        if ok:
            metric = {"throughput": mbs + stage / 10, "latency": 1.0}
            self._take(self.method.on_validation_completed(self.state, rid, metric, op.length))
        else:
            self.state.failures.add(rid)
            self._take(self.method.on_trial_exited_early(self.state, rid, ExitedReason.ERRORED))
            self.state.trials_closed.add(rid)
            self._take(self.method.on_trial_closed(self.state, rid))


def test_the_profile_gives_memory_and_max_micro_batch_per_stage() -> None:
    profile = dsat.ModelProfile.from_metrics(PROFILE)
    assert profile.memory_per_stage(slots=2) == {0: 17 * MB, 1: 13 * MB, 2: 11 * MB, 3: 9 * MB}
    assert profile.approx_max_mbs(slots=2) == ESTIMATED_MAX
    fp16 = dsat.ModelProfile.from_metrics(PROFILE, fp16=True)
    assert fp16.memory_per_stage(slots=1)[0] == (2 + 4 + 12 + 1) * MB
    with pytest.raises(dsat.ProfileError, match="reported gpu_mem=None"):
        dsat.ModelProfile.from_metrics({**PROFILE, "gpu_mem": None})


def test_binary_search_starts_at_the_estimate_and_halves_to_the_real_limit(
    model_dir: Path, tmp_path: Path
) -> None:
    method = _method("binary", model_dir, zero_stages=[2], max_concurrent_trials=1, max_trials=20)
    cluster = Cluster(method, capacity={2: 100})
    cluster.run()
    mbs = [m for _, m, _ in cluster.ran]
    # [1, 177]: midpoint = the estimate 89; ok → [90, 177] → 133 OOM → [90, 132] → 111 OOM ...
    assert mbs[:4] == [89, 133, 111, 100]
    assert (2, 100, True) in cluster.ran and all(
        m <= 100 for m in mbs if (2, m, True) in cluster.ran
    )
    assert cluster.shutdown == Shutdown(failure=False)
    assert len(cluster.ran) == 19  # max_trials counts the profiling trial
    method.save_method_state(tmp_path)
    best = json.loads((tmp_path / "best_ds_config.json").read_text())
    assert best["train_micro_batch_size_per_gpu"] == 100 and best["train_batch_size"] == 400
    assert best["zero_optimization"]["stage"] == 2 and "autotuning" not in best
    assert best["optimizer"] == {"type": "Adam", "params": {"lr": 0.001}}
    assert json.loads((tmp_path / "best_ds_metrics.json").read_text())["throughput"] == 100.2


def test_binary_search_runs_as_many_configs_as_the_limits_allow(model_dir: Path) -> None:
    method = _method("binary", model_dir, max_concurrent_trials=8, max_slots=6, max_trials=4)
    state = SearcherState()
    [create, _] = method.initial_operations(state)
    assert isinstance(create, Create)
    rid = uuid.UUID(create.request_id)
    assert method.on_validation_completed(state, rid, PROFILE, 1) == [Close(str(rid))]
    ops = method.on_trial_closed(state, rid)
    creates = [op for op in ops if isinstance(op, Create)]
    assert len(creates) == 3  # 6 slots / 2 per trial
    for op in creates:
        over = op.hparams["overwrite_deepspeed_args"]
        stage = over["zero_optimization"]["stage"]
        assert stage in (1, 2, 3) and over["train_micro_batch_size_per_gpu"] == ESTIMATED_MAX[stage]
        assert op.hparams["lr"] == 0.1
    assert {op.length for op in ops if isinstance(op, ValidateAfter)} == {6}  # end_profile_step+1


def test_random_search_stays_in_range_and_drops_stage_3_once_1_or_2_works(model_dir: Path) -> None:
    method = _method(
        "random", model_dir, max_concurrent_trials=2, max_trials=30, trials_per_random_config=4,
        random_seed=5,
    )  # fmt: skip
    cluster = Cluster(method, capacity={1: 60, 2: 70, 3: 120})
    cluster.run()
    for _, trial in method.trial_tracker:
        if trial.search_data is not None:
            data = trial.search_data
            assert data.lo <= trial.mbs <= max(data.hi, data.lo)
    first_ok = next(i for i, (s, _, ok) in enumerate(cluster.ran) if ok and s in (1, 2))
    assert any(stage == 3 for stage, _, _ in cluster.ran[:first_ok])  # seed 5 tries stage 3
    started_after = cluster.ran[first_ok + 2 :]  # the other running trial may be stage 3
    assert started_after and all(stage != 3 for stage, _, _ in started_after)
    assert all(mbs <= 70 for stage, mbs, ok in cluster.ran if ok and stage in (1, 2))
    best = method.trial_tracker.best_trial
    top = max(mbs + stage / 10 for stage, mbs, ok in cluster.ran if ok)
    assert best is not None and best.searcher_metric_val == top


def test_random_search_stops_early_without_a_new_best(model_dir: Path) -> None:
    method = _method(
        "random", model_dir, max_concurrent_trials=1, max_trials=60, early_stopping=3,
        zero_stages=[1],
    )  # fmt: skip
    cluster = Cluster(method, capacity={1: 40})
    cluster.run()
    assert cluster.shutdown == Shutdown(failure=False) and len(cluster.ran) < 59
    scores = [mbs if ok else 0 for _, mbs, ok in cluster.ran]
    best_at = scores.index(max(scores))
    assert len(cluster.ran) - 1 - best_at == 3  # three trials after the best, then it stopped


def test_asha_promotes_the_better_lineage_to_the_next_rung(model_dir: Path) -> None:
    method = _method(
        "asha", model_dir, max_concurrent_trials=2, max_trials=40, min_binary_search_trials=2,
        divisor=2, max_rungs=3, zero_stages=[1, 3], random_seed=3,
    )  # fmt: skip
    cluster = Cluster(method, capacity={1: 30, 3: 200})
    cluster.run()
    assert isinstance(method, dsat.ASHADSATSearchMethod)
    assert method.max_trials_for_rung_idx(0) == 2 and method.max_trials_for_rung_idx(1) == 4
    promoted = [
        t for _, t in method.trial_tracker if t.search_data is not None and t.search_data.curr_rung
    ]
    assert promoted, "no lineage reached rung 1"
    for trial in promoted:  # a promoted lineage was among the best half of its rung 0
        rung0 = method.rung(0)
        best0 = method.best_in_lineage(trial, 0)
        others = [method.best_in_lineage(t, 0) for t in rung0]
        values = sorted((o.searcher_metric_val or 0.0 for o in others if o), reverse=True)
        assert best0 is not None and best0.searcher_metric_val in values[: len(values) // 2 or 1]
    best = method.trial_tracker.best_trial
    assert best is not None and best.stage == 3 and best.mbs > 150


def test_the_experiment_config_and_the_cli(model_dir: Path, tmp_path: Path) -> None:
    from trialkit.pytorch.dsat._cli import dsat_experiment_config, parser

    args = parser().parse_args(["asha", "c.yaml", str(model_dir), "-z", "1", "2", "-m", "latency"])
    assert (args.max_trials, args.max_concurrent_trials, args.divisor, args.zero_stages) == (
        64, 16, 2, [1, 2],
    )  # fmt: skip
    cfg = dsat_experiment_config(_config(), args)
    assert cfg["searcher"] == {
        "name": "custom", "metric": "latency", "smaller_is_better": True, "unit": "batches",
    }  # fmt: skip
    assert cfg["hyperparameters"]["_use_dsat_mode"] is True
    assert cfg["hyperparameters"]["overwrite_deepspeed_args"]["autotuning"] == {
        "enabled": True, "start_profile_step": 3, "end_profile_step": 5,
    }  # fmt: skip
    # Under Determined's name, bad input is one line before anything is created.
    (tmp_path / "bad.yaml").write_text("entrypoint: python3 train.py\nhyperparameters: {}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "determined.pytorch.dsat", "binary", "bad.yaml", str(model_dir)],
        env={**os.environ, "PYTHONPATH": f"{BOOT_DIR}{os.pathsep}{SRC}"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == (
        "error: hyperparameters.deepspeed_config: missing; dsat needs the path of the DeepSpeed "
        "config file (relative to the model directory)"
    )
