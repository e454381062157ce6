"""A custom searcher in its own process (real child processes, real model-dir archives): it
gives the same operations as in-process, restarts from its saved state, and a hang or a crash
becomes one SearcherError naming the class while the process is gone."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests import paths
from trialkit import _modeldir
from trialkit.master.search._custom_process import CustomSearcherProcess
from trialkit.searcher import (
    Create,
    CustomMethod,
    Operation,
    SearcherError,
    Shutdown,
    ValidateAfter,
)

EXAMPLE = paths.EXAMPLES / "custom_searcher"
sys.path.insert(0, str(EXAMPLE))
from searcher import HalfwayRandomSearch  # noqa: E402

KWARGS = {"max_trials": 4, "max_length": 20, "max_concurrent": 1, "seed": 3}


def _process(model_dir: Path, spec: str, **timeouts: float) -> CustomSearcherProcess:
    return CustomSearcherProcess(7, spec, KWARGS, 99, "loss", _modeldir.pack(model_dir), **timeouts)


def _step(method: CustomMethod | CustomSearcherProcess, ops: list[Operation]) -> list[Operation]:
    """Carry out ``ops`` as the master would: create each trial, report loss = lr at targets."""
    out: list[Operation] = []
    hparams: dict[str, float] = {}
    for op in ops:
        if isinstance(op, Create):
            hparams[op.request_id] = op.hparams["lr"]
            out += method.on_trial_created(op.request_id)
        elif isinstance(op, ValidateAfter):
            lr = hparams.get(op.request_id, 0.5)
            out += method.on_validation_completed(op.request_id, {"loss": lr}, op.length)
            out += method.on_trial_closed(op.request_id)
    return out


def _search_until_shutdown(
    method: CustomMethod | CustomSearcherProcess, restart_after: int | None = None
) -> list[Operation]:
    history: list[Operation] = []
    ops = method.initial_operations()
    rounds = 0
    while ops and not any(isinstance(op, Shutdown) for op in ops):
        history += ops
        rounds += 1
        if rounds == restart_after and isinstance(method, CustomSearcherProcess):
            saved, progress = method.save(), method.progress()
            method.close()
            method = CustomSearcherProcess(
                7, method.spec, KWARGS, 99, "loss", _modeldir.pack(EXAMPLE)
            )
            method.load(saved)
            assert 0 < method.progress() == progress  # known before the new process answers
        ops = _step(method, ops)
    method.close()
    return history + ops


def test_the_process_decides_like_the_method_in_process_also_across_a_restart() -> None:
    in_process = _search_until_shutdown(CustomMethod(HalfwayRandomSearch(**KWARGS), 99, "loss"))
    child = _search_until_shutdown(_process(EXAMPLE, "searcher:HalfwayRandomSearch"))
    restarted = _search_until_shutdown(
        _process(EXAMPLE, "searcher:HalfwayRandomSearch"), restart_after=3
    )
    assert isinstance(in_process[-1], Shutdown)
    assert sum(isinstance(op, Create) for op in in_process) == 4
    # request ids are uuid4s drawn by the user's class; compare everything else
    strip = [(type(op).__name__, getattr(op, "hparams", None)) for op in in_process]
    assert [(type(op).__name__, getattr(op, "hparams", None)) for op in child] == strip
    assert [(type(op).__name__, getattr(op, "hparams", None)) for op in restarted] == strip


def _user_searcher(tmp_path: Path, handler_body: str) -> Path:
    d = tmp_path / "model"
    d.mkdir()
    (d / "searcher.py").write_text((EXAMPLE / "searcher.py").read_text())
    (d / "odd.py").write_text(
        "import os, sys, time\n"
        "from searcher import HalfwayRandomSearch\n"
        "class Odd(HalfwayRandomSearch):\n"
        "    def on_trial_created(self, state, request_id):\n"
        f"        {handler_body}\n"
        "        return []\n"
    )
    return d


def test_a_hanging_searcher_is_killed_after_the_timeout(tmp_path: Path) -> None:
    method = _process(_user_searcher(tmp_path, "time.sleep(60)"), "odd:Odd", call_timeout=1.0)
    [create, _] = method.initial_operations()
    with pytest.raises(SearcherError) as err:
        method.on_trial_created(create.request_id)  # type: ignore[union-attr]
    assert str(err.value) == (
        "custom searcher Odd.on_trial_created: no answer within 1s (its process was killed)"
    )
    with pytest.raises(SearcherError, match="no answer within 1s"):
        method.on_trial_closed(create.request_id)  # type: ignore[union-attr]  # fails for good


def test_a_crash_names_the_class_and_its_last_words(tmp_path: Path) -> None:
    body = "print('giving up', file=sys.stderr, flush=True); os._exit(3)"
    method = _process(_user_searcher(tmp_path, body), "odd:Odd")
    [create, _] = method.initial_operations()
    with pytest.raises(SearcherError) as err:
        method.on_trial_created(create.request_id)  # type: ignore[union-attr]
    assert str(err.value) == (
        "custom searcher Odd.on_trial_created: its process exited with code 3"
        " (last output: giving up)"
    )


def test_user_prints_do_not_break_the_answers(tmp_path: Path) -> None:
    method = _process(_user_searcher(tmp_path, "print('hello from the searcher')"), "odd:Odd")
    try:
        [create, _] = method.initial_operations()
        assert method.on_trial_created(create.request_id) == []  # type: ignore[union-attr]
    finally:
        method.close()


def test_a_missing_class_is_one_searcher_error(tmp_path: Path) -> None:
    method = _process(EXAMPLE, "searcher:NoSuchSearch")
    with pytest.raises(SearcherError, match="searcher has no attribute 'NoSuchSearch'"):
        method.initial_operations()
