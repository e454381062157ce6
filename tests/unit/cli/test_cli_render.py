"""The CLI's text: nothing dropped silently, whole UUIDs at 80 columns, counts and reasons."""

from __future__ import annotations

import re
import uuid
from dataclasses import replace
from typing import Any

import pytest

from trialkit.cli._common import print_table
from trialkit.cli._render import (
    StepCheckpoint,
    ended_line,
    fmt_metrics,
    plural,
    search_line,
    searcher_line,
    trial_counts,
    trial_events,
    trial_state,
)
from trialkit.rest import (
    BestTrial,
    ExperimentDescription,
    ExperimentOut,
    ExperimentState,
    MetricOut,
    PoolInfo,
    SearcherSummary,
    TrialOut,
    TrialState,
)

HPARAMS = {
    "learning_rate": 0.0123,
    "n_filters1": 12,
    "n_filters2": 20,
    "dropout1": 0.25,
    "dropout2": 0.4,
    "global_batch_size": 64,
}


def _trial(tid: int, state: str, run_id: int = 1, **extra: Any) -> TrialOut:
    fields: dict[str, Any] = {
        "id": tid,
        "experiment_id": 3,
        "request_id": f"r{tid}",
        "hparams": dict(HPARAMS),
        "seed": tid,
        "state": TrialState(state),
        "restarts": 0,
        "run_id": run_id,
        "op_length": 1,
        "op_complete": False,
        "closed": False,
        "stop_requested": False,
        "acked_run_id": None,
        "early_exit": None,
        "progress": None,
        "status": None,
        "error": None,
        "pid": None,
        "pid_started": None,
        "log_offset": 0,
        "slots": [],
        "created_at": 1.0,
        "ended_at": None,
        "latest_training": None,
        "latest_validation": None,
        "best_validation": None,
        "latest_checkpoint": None,
    }
    return TrialOut(**(fields | extra))


def _desc(
    state: str, trials: list[TrialOut], max_trials: int = 4, **exp: Any
) -> ExperimentDescription:
    experiment: dict[str, Any] = {
        "id": 3,
        "name": "mnist",
        "description": None,
        "labels": [],
        "config": {},
        "state": ExperimentState(state),
        "archived": False,
        "unmanaged": False,
        "progress": 0.5,
        "error": None,
        "created_at": 1.0,
        "ended_at": None,
        "python": None,
    }
    searcher = SearcherSummary(
        name="random",
        metric="loss",
        smaller_is_better=True,
        generation="0.38",
        max_trials=max_trials,
        progress=0.5,
        trials=len(trials),
        trial_states={},
    )
    return ExperimentDescription(
        experiment=ExperimentOut(**(experiment | exp)),
        trials=trials,
        checkpoints=[],
        best_trial=None,
        searcher=searcher,
    )


def _validation(steps: int, reported_at: float, values: dict[str, Any]) -> MetricOut:
    return MetricOut(1, 1, "validation", steps, values, reported_at)


def test_fmt_metrics_keeps_every_entry() -> None:
    text = fmt_metrics(HPARAMS)
    for key in HPARAMS:
        assert f"{key}=" in text
    assert fmt_metrics(HPARAMS, limit=2).endswith("… (+4 more)")


def test_table_at_80_columns_keeps_every_hparam_and_whole_uuids(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    uuids = [str(uuid.uuid4()) for _ in range(3)]
    rows = [
        (i, "COMPLETED", fmt_metrics(HPARAMS), "loss=0.1234, accuracy=0.98", u)
        for i, u in enumerate(uuids)
    ]
    print_table(None, ["trial", "state", "hparams", "validation", "latest checkpoint"], rows)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80, out
    # Too wide side by side without cutting words: one field a line, every word whole.
    _words_on_one_line(out, [*uuids, "COMPLETED", "accuracy=0.98"])
    _words_on_one_line(out, [f"{k}={v}," for k, v in list(HPARAMS.items())[:-1]])
    assert "…" not in out


def _words_on_one_line(out: str, words: list[str]) -> None:
    """Every word is printed whole on one line (a table may break only between words)."""
    for word in words:
        assert any(word in line.split() for line in out.splitlines()), (word, out)


def test_table_at_80_columns_breaks_only_between_words(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    hparams = "increment_by=7, learning_rate=0.01, momentum=0.9, n_layers=3, dropout=0.25"
    validation = "loss=0.1234, accuracy=0.98"
    rows = [(1, "COMPLETED", hparams, validation, str(uuid.uuid4()))]
    print_table(None, ["trial", "state", "hparams", "validation", "checkpoint"], rows)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80, out
    _words_on_one_line(out, ["COMPLETED", rows[0][4], *hparams.split(), *validation.split()])

    hparams = "increment_by=7, learning_rate=0.01, momentum=0.9, n_layers=3, width=128"
    print_table(
        None, ["trial", "state", "hparams"], [(1, "ACTIVE (validating, 1 restart)", hparams)]
    )
    out = capsys.readouterr().out
    assert "hparams" in out.splitlines()[0], out  # still a table, wrapped between words
    _words_on_one_line(out, [*hparams.split(), "(validating,"])


def test_table_is_not_wrapped_when_piped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    hparams = fmt_metrics(HPARAMS)
    print_table(None, ["trial", "state", "hparams"], [(1, "COMPLETED", hparams)])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and hparams in lines[2], lines  # header, rule, one line per row


def _column(out: str, name: str, next_name: str) -> str:
    """The text of one column of a rendered table, its wrapped pieces joined."""
    lines = out.splitlines()
    header = next(ln for ln in lines if name in ln and next_name in ln)
    start, end = header.index(name), header.index(next_name)
    body = lines[lines.index(header) + 2 :]
    return "".join(ln[start:end].strip() for ln in body)


def test_short_columns_are_not_cut_when_the_table_is_too_wide(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    u = str(uuid.uuid4())
    print_table(
        None,
        ["uuid", "trial", "steps", "state", "files", "reported"],
        [(u, 2, 10, "COMPLETED", 2, "2026-11-24 12:31")],
    )
    out = capsys.readouterr().out
    assert u in out and "COMPLETED" in out
    assert "2026-11-24" in out and "12:31" in out, out


def test_counts_say_what_happened_to_a_killed_search() -> None:
    trials = [
        _trial(1, "COMPLETED"),
        _trial(2, "ERROR", error="ValueError: boom"),
        _trial(3, "CANCELED"),
        _trial(4, "CANCELED", run_id=0),
    ]
    desc = _desc("CANCELED", trials, max_trials=6)
    assert trial_counts(desc) == (
        "1 completed · 1 errored · 2 canceled (1 never started) · 2 never created"
    )
    assert "trials done" not in search_line(desc)


def _counted(summary: str) -> dict[str, int]:
    """``{"canceled": 3, ...}`` from a summary line, notes in brackets left out."""
    parts = (re.sub(r" \(.*\)", "", p).split(" ", 1) for p in summary.split(" · "))
    return {what: int(n) for n, what in parts}


def _table_states(desc: ExperimentDescription) -> dict[str, int]:
    names = {"COMPLETED": "completed", "ERROR": "errored", "CANCELED": "canceled"}
    states = [names.get(trial_state(t).split(" ")[0], "?") for t in desc.trials]
    return {s: states.count(s) for s in set(states)}


def test_counts_agree_with_the_table_after_a_kill() -> None:
    # e kill while one trial ran and two were created but never launched; 4 planned.
    trials = [
        _trial(1, "CANCELED"),
        _trial(2, "CANCELED", run_id=0),
        _trial(3, "CANCELED", run_id=0),
    ]
    summary = trial_counts(_desc("CANCELED", trials, max_trials=4))
    assert summary == "3 canceled (2 never started) · 1 never created"
    counted = _counted(summary)
    del counted["never created"]  # planned, not in the table
    assert counted == _table_states(_desc("CANCELED", trials)) == {"canceled": 3}


def test_a_local_run_is_not_counted_as_never_started() -> None:
    # An unmanaged (local) run: the master launched nothing, so the trial has no run id.
    desc = _desc("COMPLETED", [_trial(1, "COMPLETED", run_id=0)], max_trials=8, unmanaged=True)
    assert trial_counts(desc) == "1 completed"


def test_progress_is_not_100_percent_while_a_trial_runs() -> None:
    desc = _desc("ACTIVE", [_trial(1, "ACTIVE", pid=42)], max_trials=1, progress=1.0)
    assert search_line(desc) == "random 99% · 1 running"
    desc = _desc("COMPLETED", [_trial(1, "COMPLETED")], max_trials=1, progress=1.0)
    assert search_line(desc) == "random 100% · 1 completed"


def test_a_trial_whose_ray_run_holds_slots_counts_as_running() -> None:
    """A run on a Ray node has no local pid: its slots say it runs."""
    t = _trial(1, "ACTIVE", run_id=1, pid=None, slots=[0])
    assert trial_counts(_desc("ACTIVE", [t], max_trials=1)) == "1 running"


def test_restart_back_off_says_what_it_waits_for() -> None:
    status = "restarting at 23:15:04, restart 2 of 5"
    t = _trial(1, "ACTIVE", run_id=2, restarts=2, status=status)
    assert trial_counts(_desc("ACTIVE", [t], max_trials=1)) == "1 restarting"
    assert trial_state(t, restarts=True) == f"ACTIVE ({status})"
    t = _trial(1, "ACTIVE", run_id=2, restarts=1)
    assert trial_state(t, restarts=True) == "ACTIVE (1 restart)"


def test_plurals() -> None:
    from trialkit.cli._checkpoint import deleted_summary
    from trialkit.cli._master import _pool_line

    assert searcher_line(_desc("ACTIVE", [], max_trials=1)).endswith("at most 1 trial")
    assert plural(1, "checkpoint") == "1 checkpoint" and plural(2, "slot") == "2 slots"
    pool = PoolInfo(name="default", type="local", slots=1, slot_type="cpu")
    assert _pool_line(pool) == "default: 1 CPU slot on this machine"
    assert deleted_summary(1, 1, 0) == "1 checkpoint deleted, 1 byte freed"


def test_counts_while_running() -> None:
    desc = _desc("ACTIVE", [_trial(1, "ACTIVE", pid=42), _trial(2, "COMPLETED")], max_trials=4)
    assert trial_counts(desc) == "1 running · 1 completed · 2 to start"


def test_ended_line_gives_the_reason() -> None:
    trials = [_trial(1, "COMPLETED"), _trial(2, "ERROR", error="ValueError: boom\nlast lines")]
    assert (
        ended_line(3, _desc("ERROR", trials)) == "experiment 3 ended ERROR: trial 2 failed: "
        "ValueError: boom (full output: trialkit t logs 2)"
    )
    own = _desc("ERROR", trials, error="searcher error: bad")
    assert ended_line(3, own) == (
        "experiment 3 ended ERROR: searcher error: bad (full output: trialkit t logs 2)"
    )
    assert ended_line(3, _desc("COMPLETED", [_trial(1, "COMPLETED")])) == (
        "experiment 3 ended COMPLETED"
    )


def test_events_one_line_each() -> None:
    started = _trial(1, "ACTIVE", pid=7)
    validated = replace(
        started,
        latest_validation=_validation(100, 1.0, {"loss": 0.5}),
        latest_checkpoint="abc",
    )
    failed = replace(validated, state=TrialState.ERROR, error="RuntimeError: nan loss")
    assert trial_events(None, started, "loss")[0].startswith("trial 1 started: learning_rate=")
    assert trial_events(started, validated, "loss") == [
        "trial 1 validation at step 100: loss=0.5",
        "trial 1 checkpoint abc",
    ]
    assert trial_events(validated, failed, "loss") == [
        "trial 1 failed: RuntimeError: nan loss (full output: trialkit t logs 1)"
    ]
    assert trial_events(failed, failed, "loss") == []


def test_events_of_a_restart_name_the_failed_run_and_count_from_the_first() -> None:
    # The master counts the restart when run 1 exits, before run 2 starts (after a back-off).
    run1 = replace(_trial(1, "ACTIVE", pid=7), run_id=1, restarts=0)
    run1_failed = replace(run1, restarts=1, pid=None, error="OSError: disk\nlast lines")
    run2 = replace(run1_failed, run_id=2, pid=8)
    first_seen = trial_events(None, run1_failed, None)
    assert first_seen[0].startswith("trial 1 started: ")
    assert first_seen[1] == "trial 1 failed, restarting: OSError: disk"
    both = trial_events(run1, run2, None)  # run 1 failed and run 2 started between two polls
    assert both[0] == "trial 1 failed, restarting: OSError: disk"
    assert both[1].startswith("trial 1 started (restart 1): ")
    assert trial_events(run1, run1_failed, None) == ["trial 1 failed, restarting: OSError: disk"]
    assert trial_events(run1_failed, run2, None)[0].startswith("trial 1 started (restart 1): ")


def test_state_shows_status_only_while_running() -> None:
    assert trial_state(_trial(1, "ACTIVE", status="validating")) == "ACTIVE (validating)"
    assert trial_state(_trial(1, "COMPLETED", status="checkpointing")) == "COMPLETED"
    assert trial_state(_trial(1, "ERROR", restarts=2), restarts=True) == "ERROR (2 restarts)"


def test_best_trial_is_told_by_its_keys_not_by_dict_order() -> None:
    from trialkit.cli._render import best_line

    # ``hparams`` first and a metric named like a field: nothing is recovered by position.
    best = BestTrial(hparams={"lr": 0.1}, value=0.0123, metric="trial_id", trial_id=2)
    trials = [_trial(2, "COMPLETED", latest_checkpoint="abc")]
    desc = replace(
        _desc("COMPLETED", trials, max_trials=1), best_trial=replace(best, checkpoint="abc")
    )
    assert search_line(desc).endswith("best trial 2 trial_id=0.0123")
    assert best_line(desc) == "best: trial 2 trial_id=0.0123 (lr=0.1), checkpoint abc"


def test_a_trial_error_is_told_without_its_control_characters() -> None:
    started = _trial(2, "ACTIVE", pid=7)
    failed = replace(started, state=TrialState.ERROR, error="\x1b[2J\x07boom\x18\nmore")
    assert trial_events(started, failed, None) == [
        "trial 2 failed: boom (full output: trialkit t logs 2)"
    ]


def test_a_multi_line_error_is_told_with_its_cause() -> None:
    error = "ValueError: in user code:\n\n    File x.py, line 3\n    ValueError: Input 0 is bad\n"
    started = _trial(2, "ACTIVE", pid=7)
    failed = replace(started, state=TrialState.ERROR, error=error)
    assert trial_events(started, failed, None) == [
        "trial 2 failed: ValueError: in user code: … ValueError: Input 0 is bad"
        " (full output: trialkit t logs 2)"
    ]


def test_following_groups_a_checkpoint_with_its_step_in_step_order() -> None:
    from trialkit.cli._follow import _hold_last_step

    started = _trial(1, "ACTIVE", pid=7)
    val = _validation(100, 2.0, {"loss": 0.5})
    at_75 = StepCheckpoint("75757575-aaaa-bbbb-cccc-dddddddddddd", 75)
    at_100 = StepCheckpoint("10010010-aaaa-bbbb-cccc-dddddddddddd", 100)
    # the step-75 checkpoint is told before the step-100 validation, which carries its own
    assert trial_events(started, started, "loss", [val], [at_75, at_100]) == [
        "trial 1 checkpoint 75757575 at step 75",
        "trial 1 validation at step 100: loss=0.5, checkpoint 10010010",
    ]
    # a checkpoint's line carries the training metrics reported at its step
    trained_75 = replace(at_75, values={"x": 7})
    assert trial_events(started, started, "loss", [], [trained_75]) == [
        "trial 1 step 75: x=7, checkpoint 75757575"
    ]
    # the newest step's validation or checkpoint waits one poll for the other, only once
    assert _hold_last_step([val], [at_75], set()) == (([], [at_75]), ([val], []))
    assert _hold_last_step([], [at_100], set()) == (([], []), ([], [at_100]))
    assert _hold_last_step([val], [at_100], set()) == (([val], [at_100]), ([], []))
    assert _hold_last_step([val], [], {100}) == (([val], []), ([], []))


def test_a_list_at_80_columns_stays_a_table_with_dates_folded_above_their_times(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `e list`'s columns: 91 characters side by side; one field a line (7 lines an experiment)
    # only where folding the short values between words cannot fit them either.
    monkeypatch.setenv("COLUMNS", "80")
    columns = ["id", "name", "state", "progress", "trials", "started", "ended"]
    rows = [
        (
            i,
            "core-api-stage-3",
            "COMPLETED",
            "100%",
            "4 completed",
            "2026-11-28 08:10",
            "2026-11-28 08:11",
        )
        for i in (1, 2)
    ]
    print_table(None, columns, rows)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == columns, lines
    assert max(len(line) for line in lines) <= 80, lines
    assert len(lines) == 2 + 2 * 2  # header, rule, then two lines a row
    _words_on_one_line("\n".join(lines), ["core-api-stage-3", "2026-11-28", "08:10", "completed"])
