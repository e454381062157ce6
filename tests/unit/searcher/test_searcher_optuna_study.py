"""searcher.name: optuna, read back from the study it keeps: what each trial was told (COMPLETE
with its value, PRUNED, FAIL), the steps reported, the direction, the sampler's own draws, and a
restart (save/load) that keeps all of it."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from trialkit import searcher as ts
from trialkit.searcher import Create, DrivenMethod, ExitedReason, make_search_method

optuna = pytest.importorskip("optuna")

from trialkit.searcher._optuna import _MemoryJournal  # noqa: E402

STATE = optuna.trial.TrialState
SPACE: dict[str, Any] = {
    "lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1},
    "layers": {"type": "int", "minval": 1, "maxval": 4},
    "act": {"type": "categorical", "vals": ["relu", [1, 2], None]},
    "opt": {"momentum": {"type": "double", "minval": 0.0, "maxval": 0.9}, "name": "sgd"},
    "batch": {"type": "const", "val": 32},
    "bare": 7,
}
NO_CATEGORICAL = {"x": {"type": "double", "minval": 0.0, "maxval": 1.0}, "n": 3}


def cfg_038(**fields: Any) -> dict[str, Any]:
    base = {"name": "optuna", "metric": "loss", "max_trials": 4, "max_concurrent_trials": 1,
            "time_metric": "batches", "max_time": 8}  # fmt: skip
    return {**base, **fields}


def study_of(method: DrivenMethod) -> Any:
    """The Optuna study as the method saved it (its journal is part of the searcher state)."""
    journal = _MemoryJournal(method.save()["strategy"]["journal"])
    return optuna.load_study(study_name="trialkit", storage=optuna.storages.JournalStorage(journal))


def reloaded(method: DrivenMethod, searcher: dict[str, Any], space: dict[str, Any]) -> DrivenMethod:
    """A restarted master's method: a fresh one loaded with the JSON state."""
    fresh = make_search_method(searcher, space, 0)
    fresh.load(json.loads(json.dumps(method.save())))
    return fresh


def creates(ops: list[Any]) -> list[Create]:
    return [op for op in ops if isinstance(op, Create)]


def test_each_trial_is_told_its_outcome_with_its_hparams() -> None:
    """Trained to the end: COMPLETE with the last value; errored or closed without a report:
    FAIL; InvalidHP: FAIL and replaced. The study's params are the Create's hparams."""
    m = make_search_method(cfg_038(pruner="NopPruner", max_concurrent_trials=4), SPACE, 0)
    first = creates(m.initial_operations())
    assert len(first) == 4
    done, errored, silent, invalid = (c.request_id for c in first)
    for rid in (done, errored, silent, invalid):
        m.on_trial_created(rid)
    m.on_validation_completed(done, {"loss": 3.0, "batches": 4})
    m.on_validation_completed(done, {"loss": 2.0, "batches": 8})
    m.on_trial_closed(done)
    m.on_validation_completed(errored, {"loss": 1.0, "batches": 4})
    m.on_trial_exited_early(errored, ExitedReason.ERRORED)
    m.on_trial_closed(errored)
    m.on_trial_closed(silent)
    m.on_trial_exited_early(invalid, ExitedReason.INVALID_HP)
    [replacement] = creates(m.on_trial_closed(invalid))
    trials = study_of(m).trials
    assert [(t.state, t.value) for t in trials] == [
        (STATE.COMPLETE, 2.0), (STATE.FAIL, None), (STATE.FAIL, None), (STATE.FAIL, None),
        (STATE.RUNNING, None),
    ]  # fmt: skip
    assert trials[0].intermediate_values == {4: 3.0, 8: 2.0}
    vals = SPACE["act"]["vals"]
    for create, trial in zip([*first, replacement], trials, strict=True):
        p = trial.params
        assert set(p) == {"lr", "layers", "act", "opt.momentum"}
        assert create.hparams == {
            "lr": p["lr"], "layers": p["layers"], "act": vals[p["act"]],
            "opt": {"momentum": p["opt.momentum"], "name": "sgd"}, "batch": 32, "bare": 7,
        }  # fmt: skip


def test_a_pruned_trial_is_told_pruned_and_later_events_change_nothing() -> None:
    pruner = {"pruner": "ThresholdPruner", "pruner_kwargs": {"upper": 1.0}}
    m = make_search_method(cfg_038(**pruner), NO_CATEGORICAL, 0)
    [first] = creates(m.initial_operations())
    m.on_trial_created(first.request_id)
    assert m.on_validation_completed(first.request_id, {"loss": 0.5, "batches": 1}) == []
    m = reloaded(m, cfg_038(**pruner), NO_CATEGORICAL)  # the configured pruner, not the default
    assert m.on_validation_completed(first.request_id, {"loss": 5.0, "batches": 2}) == [
        ts.Stop(first.request_id)
    ]
    m = reloaded(m, cfg_038(**pruner), NO_CATEGORICAL)
    [second] = creates(m.on_trial_closed(first.request_id))
    [trial, _] = study_of(m).trials
    assert (trial.state, trial.value, trial.intermediate_values) == (
        STATE.PRUNED,
        5.0,
        {1: 0.5, 2: 5.0},
    )
    assert set(second.hparams) == {"x", "n"} and second.hparams["n"] == 3


@pytest.mark.parametrize("smaller_is_better", [True, False])
def test_the_study_direction_follows_smaller_is_better(smaller_is_better: bool) -> None:
    """MedianPruner after one completed trial: a worse first report is pruned, a better one not."""
    searcher = cfg_038(smaller_is_better=smaller_is_better,
                       pruner_kwargs={"n_startup_trials": 1, "n_warmup_steps": 0})  # fmt: skip
    m = make_search_method(searcher, NO_CATEGORICAL, 0)
    [first] = creates(m.initial_operations())
    m.on_trial_created(first.request_id)
    m.on_validation_completed(first.request_id, {"loss": 5.0, "batches": 1})
    [second] = creates(m.on_trial_closed(first.request_id))
    m.on_trial_created(second.request_id)
    ops = m.on_validation_completed(second.request_id, {"loss": 1.0, "batches": 1})
    assert ops == ([] if smaller_is_better else [ts.Stop(second.request_id)])
    expected = optuna.study.StudyDirection
    assert study_of(m).direction == (expected.MINIMIZE if smaller_is_better else expected.MAXIMIZE)


def test_only_increasing_steps_are_reported_also_after_a_restart() -> None:
    """A step at or below the last one reported (a trial resumed from an older checkpoint) is
    not given to Optuna again; the last value still counts for the trial's result."""
    searcher = cfg_038(pruner="NopPruner")
    m = make_search_method(searcher, NO_CATEGORICAL, 0)
    [first] = creates(m.initial_operations())
    rid = first.request_id
    m.on_trial_created(rid)
    m.on_validation_completed(rid, {"loss": 9.0, "batches": -1})  # Optuna takes no negative step
    m.on_validation_completed(rid, {"loss": 4.0, "batches": 0})
    m.on_validation_completed(rid, {"loss": 3.0, "batches": 4})
    m = reloaded(m, searcher, NO_CATEGORICAL)
    m.on_validation_completed(rid, {"loss": 2.0, "batches": 2})
    m.on_validation_completed(rid, {"loss": 1.5, "batches": 4})
    m.on_trial_closed(rid)
    [trial, _] = study_of(m).trials
    assert trial.intermediate_values == {0: 4.0, 4: 3.0}
    assert (trial.state, trial.value) == (STATE.COMPLETE, 1.5)


def test_an_exit_after_a_restart_is_told_once() -> None:
    """Errored, then the master restarts before the close arrives: the close adds nothing."""
    searcher = cfg_038(max_trials=2)
    m = make_search_method(searcher, NO_CATEGORICAL, 0)
    [first] = creates(m.initial_operations())
    m.on_trial_created(first.request_id)
    m.on_trial_exited_early(first.request_id, ExitedReason.ERRORED)
    m = reloaded(m, searcher, NO_CATEGORICAL)
    assert len(creates(m.on_trial_closed(first.request_id))) == 1
    assert [t.state for t in study_of(m).trials] == [STATE.FAIL, STATE.RUNNING]


def test_a_trial_closing_after_a_restart_completes_with_its_last_report() -> None:
    searcher = cfg_038(pruner="NopPruner")
    m = make_search_method(searcher, NO_CATEGORICAL, 0)
    [first] = creates(m.initial_operations())
    m.on_trial_created(first.request_id)
    m.on_validation_completed(first.request_id, {"loss": 0.25, "batches": 8})
    m = reloaded(m, searcher, NO_CATEGORICAL)
    m.on_trial_closed(first.request_id)
    [trial, _] = study_of(m).trials
    assert (trial.state, trial.value) == (STATE.COMPLETE, 0.25)


def test_telling_outcomes_raises_no_optuna_warning() -> None:
    """A repeated step is not reported again, and a trial without a value is told FAIL
    (not COMPLETE with None, which Optuna turns into FAIL with a warning)."""
    m = make_search_method(cfg_038(pruner="NopPruner", max_concurrent_trials=3), NO_CATEGORICAL, 0)
    repeated, silent, errored = (c.request_id for c in creates(m.initial_operations()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for rid in (repeated, silent, errored):
            m.on_trial_created(rid)
        m.on_validation_completed(repeated, {"loss": 1.0, "batches": 4})
        m.on_validation_completed(repeated, {"loss": 2.0, "batches": 4})
        m.on_trial_closed(repeated)
        m.on_trial_closed(silent)
        m.on_trial_exited_early(errored, ExitedReason.ERRORED)
        m.on_trial_closed(errored)
    states = [(t.state, t.value) for t in study_of(m).trials[:3]]
    assert states == [(STATE.COMPLETE, 2.0), (STATE.FAIL, None), (STATE.FAIL, None)]


def test_037_a_trial_closed_with_its_operation_outstanding_leaves_nothing_behind() -> None:
    """It ended without finishing its ValidateAfter (no early exit): FAIL, replaced, and no
    outstanding target kept in the saved state."""
    searcher = {"name": "optuna", "metric": "loss", "max_trials": 2, "max_concurrent_trials": 1,
                "max_length": {"batches": 16}}  # fmt: skip
    m = make_search_method(searcher, NO_CATEGORICAL, 0)
    [first] = creates(m.initial_operations())
    m.on_trial_created(first.request_id)
    [second] = creates(m.on_trial_closed(first.request_id))
    assert list(m.save()["strategy"]["target"]) == [second.request_id]
    assert [t.state for t in study_of(m).trials] == [STATE.FAIL, STATE.RUNNING]


def run_037(searcher: dict[str, Any], reload_at: int | None = None) -> tuple[list[Any], Any]:
    """Complete the ValidateAfters, last issued first (loss falls with length); the sixth
    event is an error instead. Returns the operations and the final method."""
    m = make_search_method(searcher, NO_CATEGORICAL, 0)
    log, queue, events = list[Any](), list[Any](m.initial_operations()), 0
    inflight: dict[str, int] = {}
    while queue:
        op = queue.pop(0)
        log.append(op)
        if isinstance(op, Create):
            queue += m.on_trial_created(op.request_id)
        elif isinstance(op, ts.ValidateAfter):
            inflight[op.request_id] = op.length
        elif isinstance(op, ts.Shutdown):
            break
        if queue or not inflight:
            continue
        if events == reload_at:
            m = reloaded(m, searcher, NO_CATEGORICAL)
        events += 1
        rid, length = inflight.popitem()
        if events == 6:
            queue += m.on_trial_exited_early(rid, ExitedReason.ERRORED)
            queue += m.on_trial_closed(rid)
            continue
        ops = m.on_validation_completed(rid, {"loss": 100.0 / length}, length)
        queue += ops
        if any(getattr(o, "request_id", None) == rid and not isinstance(o, ts.ValidateAfter)
               for o in ops):  # fmt: skip
            queue += m.on_trial_closed(rid)
    return log, m


@pytest.mark.parametrize("max_length", [8, 81])
def test_037_validates_at_eighths_quarters_halves_and_the_end(max_length: int) -> None:
    searcher = {"name": "optuna", "metric": "loss", "max_trials": 4, "max_concurrent_trials": 2,
                "pruner": "NopPruner", "max_length": {"batches": max_length}}  # fmt: skip
    log, m = run_037(searcher)
    assert isinstance(log[-1], ts.Shutdown) and len(creates(log)) == 4
    targets = [max_length // 8, max_length // 4, max_length // 2, max_length]
    by_trial: dict[str, list[int]] = {}
    for op in log:
        if isinstance(op, ts.ValidateAfter):
            by_trial.setdefault(op.request_id, []).append(op.length)
    assert all(lengths == targets[: len(lengths)] for lengths in by_trial.values())
    study = study_of(m)
    assert [t.state for t in study.trials].count(STATE.COMPLETE) == 3
    completed = [t for t in study.trials if t.state == STATE.COMPLETE]
    assert all(t.value == 100.0 / max_length for t in completed)
    assert all(sorted(t.intermediate_values) == targets for t in completed)
    assert m.save()["strategy"]["target"] == {}  # nothing left outstanding


def test_037_save_load_continues_identically() -> None:
    searcher = {"name": "optuna", "metric": "loss", "max_trials": 5, "max_concurrent_trials": 2,
                "max_length": {"batches": 81}}  # fmt: skip
    full, _ = run_037(searcher)
    for reload_at in (0, 3, 7):
        assert run_037(searcher, reload_at)[0] == full


def test_invalid_hp_trials_do_not_use_up_max_trials() -> None:
    """Three trials, the first InvalidHP: four created in all, then Shutdown."""
    m = make_search_method(cfg_038(max_trials=3, max_concurrent_trials=3), NO_CATEGORICAL, 0)
    live = [c.request_id for c in creates(m.initial_operations())]
    count = len(live)
    m.on_trial_exited_early(live[0], ExitedReason.INVALID_HP)
    ops: list[Any] = []
    for rid in list(live):
        ops = m.on_trial_closed(rid)
        count += len(creates(ops))
        live += [c.request_id for c in creates(ops)]
    for rid in live[3:]:
        ops = m.on_trial_closed(rid)
        count += len(creates(ops))
    assert count == 4 and isinstance(ops[-1], ts.Shutdown)


def test_progress_counts_units_037_and_reported_fractions_038() -> None:
    m = make_search_method(cfg_038(max_concurrent_trials=4), NO_CATEGORICAL, 0)
    rids = [c.request_id for c in creates(m.initial_operations())]
    m.on_trial_created(rids[0])
    m.on_trial_progress(rids[0], 0.5)
    assert m.progress() == 0.5 / 4
    searcher = {"name": "optuna", "metric": "loss", "max_trials": 4, "max_length": {"batches": 80}}
    m = make_search_method(searcher, NO_CATEGORICAL, 0)
    rids = [c.request_id for c in creates(m.initial_operations())]
    m.on_trial_created(rids[0])
    m.on_trial_progress(rids[0], 40)
    assert m.progress() == 40 / (80 * 4)


def test_the_sampler_draws_the_params_and_a_given_seed_wins() -> None:
    """RandomSampler seeded with the experiment seed, or with sampler_kwargs' seed if given:
    the first trial's hparams are that sampler's first draw (log-uniform for a log leaf)."""
    space = {"lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1},
             "n": {"type": "int", "minval": 1, "maxval": 100}}  # fmt: skip
    d = optuna.distributions
    dists = {"lr": d.FloatDistribution(1e-4, 1e-1, log=True), "n": d.IntDistribution(1, 100)}

    def optunas_first(seed: int) -> dict[str, Any]:
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
        return study.ask(dists).params

    for kwargs, seed in (({}, 11), ({"seed": 5}, 5)):
        searcher = cfg_038(sampler="RandomSampler", sampler_kwargs=kwargs)
        [first] = creates(make_search_method(searcher, space, 11).initial_operations())
        assert first.hparams == optunas_first(seed)


def test_errors_name_the_metric_the_trial_and_the_setting() -> None:
    m = make_search_method(cfg_038(), NO_CATEGORICAL, 0)
    [first] = creates(m.initial_operations())
    rid = first.request_id
    m.on_trial_created(rid)
    with pytest.raises(ts.SearcherError) as e:
        m.on_validation_completed(rid, {"loss": 1.0})
    assert str(e.value) == (
        f"trial {rid}: the time metric 'batches' must be a finite number for optuna, got"
        " nothing (validation metrics reported: {'loss': 1.0})"
    )
    with pytest.raises(ts.SearcherError) as e:
        m.on_validation_completed(rid, {"batches": 1})
    assert str(e.value).startswith(
        f"trial {rid}: the searcher metric 'loss' must be a finite number for optuna, got nothing"
    )


def test_config_errors_name_an_example_and_the_failing_kwargs() -> None:
    with pytest.raises(ValueError) as e:
        make_search_method(cfg_038(sampler="TPE", pruner="Median"), NO_CATEGORICAL, 0)
    assert "searcher.sampler: got 'TPE'; expected a class in optuna.samplers (e.g. TPESampler)" in (
        str(e.value)
    )
    assert (
        "searcher.pruner: got 'Median'; expected a class in optuna.pruners (e.g. MedianPruner)"
        in (str(e.value))
    )
    with pytest.raises(ValueError, match=r"searcher.pruner_kwargs: MedianPruner\(\{'bogus': 1\}\)"
                       " failed: "):  # fmt: skip
        make_search_method(cfg_038(pruner_kwargs={"bogus": 1}), NO_CATEGORICAL, 0)
    with pytest.raises(ValueError, match="hyperparameters.x.type: 'weird' is not supported by"):
        make_search_method(cfg_038(), {"x": {"type": "weird"}}, 0)


def test_a_failing_ask_is_a_searcher_error_naming_the_sampler() -> None:
    sampler = {"sampler": "GridSampler", "sampler_kwargs": {"search_space": {"y": [1]}}}
    with pytest.raises(ts.SearcherError, match=r"^optuna GridSampler.ask failed: ValueError: "):
        make_search_method(cfg_038(**sampler), NO_CATEGORICAL, 0).initial_operations()
