"""searcher.name: optuna — Optuna samplers by name, pruners as early stopping, both length
contracts, and a study that survives save/load (the master's restart path)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

import pytest

from trialkit.searcher import (
    Close,
    Create,
    ExitedReason,
    SearcherError,
    Shutdown,
    Stop,
    ValidateAfter,
    make_search_method,
)

SPACE = {
    "lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1},
    "layers": {"type": "int", "minval": 1, "maxval": 4},
    "act": {"type": "categorical", "vals": ["relu", [1, 2], None]},
    "opt": {"momentum": {"type": "double", "minval": 0.0, "maxval": 0.9}, "name": "sgd"},
    "batch": 32,
}


def loss(h: dict[str, Any], step: int) -> float:
    """A known optimum at lr = 1e-2, 2 layers; longer training helps."""
    import math

    return (math.log10(h["lr"]) + 2) ** 2 + 0.1 * (h["layers"] - 2) ** 2 + 1.0 / step


def optuna_cfg(**fields: Any) -> dict[str, Any]:
    base = {"name": "optuna", "metric": "loss", "max_trials": 12, "max_concurrent_trials": 3}
    return {**base, **fields}


def run_038(searcher: dict[str, Any], reload_at: int | None = None, seed: int = 1) -> list[Any]:
    """Each trial reports at steps 1..8 (time_metric 'batches') unless stopped; returns the ops."""
    pytest.importorskip("optuna")
    method = make_search_method(searcher, SPACE, seed)
    log: list[Any] = []
    live: dict[str, tuple[dict[str, Any], int]] = {}
    pending = list(method.initial_operations())
    rng = random.Random(seed)
    events = 0
    while True:
        while pending:
            op = pending.pop(0)
            log.append(op)
            if isinstance(op, Create):
                live[op.request_id] = (op.hparams, 0)
                pending += method.on_trial_created(op.request_id)
            elif isinstance(op, Stop):
                live.pop(op.request_id, None)
                pending += method.on_trial_closed(op.request_id)
            elif isinstance(op, Shutdown):
                return log
        if events == reload_at:
            fresh = make_search_method(searcher, SPACE, seed)
            fresh.load(json.loads(json.dumps(method.save())))
            method = fresh
        events += 1
        rid = sorted(live)[rng.randrange(len(live))]
        h, step = live[rid]
        step += 1
        live[rid] = (h, step)
        pending += method.on_validation_completed(rid, {"loss": loss(h, step), "batches": step})
        if step == 8 and rid in live:
            del live[rid]
            pending += method.on_trial_closed(rid)


def test_tpe_038_prunes_with_stop_and_runs_max_trials() -> None:
    log = run_038(optuna_cfg(time_metric="batches", max_time=8))
    creates = [op for op in log if isinstance(op, Create)]
    assert len(creates) == 12 and isinstance(log[-1], Shutdown)
    for c in creates:
        h = c.hparams
        assert 1e-4 <= h["lr"] <= 1e-1 and h["layers"] in (1, 2, 3, 4)
        assert h["act"] in ("relu", [1, 2], None)  # categorical values restored, any JSON type
        assert h["opt"]["name"] == "sgd" and 0.0 <= h["opt"]["momentum"] <= 0.9
        assert h["batch"] == 32 and isinstance(c.trial_seed, int)
    assert any(isinstance(op, Stop) for op in log), "MedianPruner never pruned"
    assert not any(isinstance(op, (ValidateAfter, Close)) for op in log)


def test_study_save_load_continues_identically() -> None:
    cfg = optuna_cfg(time_metric="batches", max_time=8)
    full = run_038(cfg)
    for reload_at in (0, 5, 40):
        assert run_038(cfg, reload_at) == full


def test_same_seed_same_trials_other_seed_others() -> None:
    cfg = optuna_cfg(time_metric="batches", max_time=8)
    hp = [op.hparams for op in run_038(cfg) if isinstance(op, Create)]
    assert hp == [op.hparams for op in run_038(cfg) if isinstance(op, Create)]
    assert hp != [op.hparams for op in run_038(cfg, seed=2) if isinstance(op, Create)]


@pytest.mark.parametrize("sampler", ["RandomSampler", "TPESampler", "NSGAIISampler"])
def test_any_sampler_by_name_and_nop_pruner(sampler: str) -> None:
    log = run_038(
        optuna_cfg(time_metric="batches", max_time=8, sampler=sampler, pruner="NopPruner")
    )
    assert sum(isinstance(op, Create) for op in log) == 12
    assert not any(isinstance(op, Stop) for op in log)  # NopPruner never prunes


def test_037_validates_at_fractions_of_max_length_and_closes() -> None:
    pytest.importorskip("optuna")
    m = make_search_method(
        optuna_cfg(max_length={"batches": 80}, max_trials=6, max_concurrent_trials=0,
                   pruner="SuccessiveHalvingPruner",
                   pruner_kwargs={"min_resource": 10, "reduction_factor": 2}), SPACE, 0,
    )  # fmt: skip
    ops = m.initial_operations()
    creates = [op for op in ops if isinstance(op, Create)]
    assert len(creates) == 6
    assert [op.length for op in ops if isinstance(op, ValidateAfter)] == [10] * 6
    lengths: dict[str, list[int]] = {c.request_id: [] for c in creates}
    queue = [(op.request_id, op.length) for op in ops if isinstance(op, ValidateAfter)]
    closed: set[str] = set()
    shutdown = False
    for c in creates:
        m.on_trial_created(c.request_id)
    while queue:
        rid, length = queue.pop(0)
        lengths[rid].append(length)
        h = next(c.hparams for c in creates if c.request_id == rid)
        for op in m.on_validation_completed(rid, {"loss": loss(h, length)}, length):
            if isinstance(op, ValidateAfter):
                queue.append((op.request_id, op.length))
            elif isinstance(op, Close):
                closed.add(op.request_id)
                shutdown |= any(isinstance(x, Shutdown) for x in m.on_trial_closed(op.request_id))
    assert closed == set(lengths) and shutdown
    for seq in lengths.values():
        assert seq == [10, 20, 40, 80][: len(seq)]
    assert any(len(s) < 4 for s in lengths.values()), "SuccessiveHalvingPruner pruned nothing"
    assert any(len(s) == 4 for s in lengths.values())


def test_invalid_hp_is_replaced_and_errors_are_named() -> None:
    pytest.importorskip("optuna")
    m = make_search_method(optuna_cfg(time_metric="batches", max_time=8, max_trials=2), SPACE, 0)
    first, second = [op.request_id for op in m.initial_operations() if isinstance(op, Create)]
    m.on_trial_created(first)
    m.on_trial_exited_early(first, ExitedReason.INVALID_HP)
    [replacement] = [op for op in m.on_trial_closed(first) if isinstance(op, Create)]
    with pytest.raises(
        SearcherError, match="'loss' must be a finite number for optuna, got nothing"
    ):
        m.on_validation_completed(second, {"accuracy": 1.0, "batches": 1})
    assert replacement.request_id not in (first, second)


def test_config_errors_list_every_problem() -> None:
    pytest.importorskip("optuna")
    with pytest.raises(ValueError) as e:
        make_search_method(
            optuna_cfg(sampler="TPE", pruner="Median", time_metric="batches", max_time=8),
            SPACE, 0,
        )  # fmt: skip
    assert "searcher.sampler: got 'TPE'" in str(e.value)
    assert "searcher.pruner: got 'Median'" in str(e.value)


def test_master_and_searcher_do_not_import_optuna() -> None:
    code = (
        "import sys, trialkit.master, trialkit.searcher, trialkit.cli;"
        "assert 'optuna' not in sys.modules, 'optuna imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_optuna_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)  # makes `import optuna` fail
    message = (
        r"^searcher.name: optuna needs the optuna package: pip install optuna"
        r" \(or pip install 'trialkit\[optuna\]'\)$"
    )
    with pytest.raises(SearcherError, match=message):
        make_search_method(optuna_cfg(time_metric="batches", max_time=8), SPACE, 0)
