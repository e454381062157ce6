"""The loop's metric handling (harness/_report.py): numbers out of tensors and arrays, the mean
over batches, the log line's format, a callback's report period, and the local progress bar."""

from __future__ import annotations

import re
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.local_runs import ingested_store
from tests.unit.harness.test_harness_loop import CountingStrategy, _settings
from trialkit import core
from trialkit.harness import (
    Batch,
    Target,
    TrainLoop,
    average_batches,
    format_metrics,
    report_period,
    scalar,
)
from trialkit.harness._report import Bar


def test_a_report_period_is_epoch_or_a_positive_batch_count() -> None:
    assert report_period("epoch") == "epoch"
    assert report_period(1) == 1 and report_period(50) == 50
    message = (
        r"""^train_metrics_report_period: got {}; expected "epoch" or a positive number of """
        r"batches$"
    )
    for bad in (0, -3, True, 2.0, "batch", None):
        with pytest.raises(ValueError, match=message.format(re.escape(repr(bad)))):
            report_period(bad)


def test_numpy_scalars_become_python_numbers_and_arrays_stay_arrays() -> None:
    for value, plain in ((np.float32(0.5), 0.5), (np.int64(3), 3), (np.array(2.5), 2.5)):
        out = scalar(value)
        assert out == plain and type(out) is type(plain), (value, out)
    one = np.array([1.5])  # size 1: its one number
    assert scalar(one) == 1.5 and type(scalar(one)) is float
    many = np.array([1.0, 2.0])
    assert scalar(many) is many  # several numbers: left as the strategy gave them
    for value in (0.25, 7, "text", None, [1, 2]):
        assert scalar(value) is value


class _Meter:
    """A user's metric object with an ``item()`` but no ``size``: not array-like."""

    def item(self) -> float:
        return 1.0


def test_a_value_with_item_but_no_size_is_left_alone() -> None:
    meter = _Meter()
    assert scalar(meter) is meter


def test_torch_tensors_become_a_number_or_a_list() -> None:
    torch = pytest.importorskip("torch")  # the torch env runs this (tox.ini)
    grad = torch.tensor([2.0], requires_grad=True) * 1.25  # detached before reading
    for value, plain in ((torch.tensor(0.5), 0.5), (grad, 2.5), (torch.tensor(3), 3)):
        out = scalar(value)
        assert out == plain and type(out) is type(plain), (value, out)
    assert scalar(torch.tensor([1.0, 2.0])) == [1.0, 2.0]
    assert scalar(torch.tensor([[1, 2], [3, 4]])) == [[1, 2], [3, 4]]


def test_the_mean_over_batches_of_each_metric_and_none_where_it_is_not_a_number() -> None:
    batches: list[dict[str, Any]] = [
        {"loss": 1.0, "acc": 1, "name": "a", "flag": True, "gone": None},
        {"loss": 2.0, "acc": None, "name": "b", "flag": False, "gone": None},
        {"loss": 6.0},  # a worker that reported only the loss
        {},  # a worker that reported nothing
    ]
    avg = average_batches(batches)
    assert avg == {"loss": 3.0, "acc": 1.0, "name": None, "flag": None, "gone": None}
    assert list(avg) == ["loss", "acc", "name", "flag", "gone"]  # first seen, first listed
    assert average_batches([]) == {}


def test_a_log_line_lists_the_metrics_but_the_step_counters() -> None:
    metrics = {"loss": 0.123456, "batches": 3, "n": 123456, "epochs": 1, "tag": None,
               "records": 6, "best": 2.0}  # fmt: skip
    assert format_metrics(metrics) == "loss=0.1235, n=123456, tag=None, best=2"
    assert format_metrics({"batches": 1}) == ""


class NumpyMetrics(CountingStrategy):
    """Reports numpy values, as a strategy computing its metrics with numpy does."""

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int) -> Any:
        super().train_batch(batch, epoch_idx, batch_idx, epoch_len)
        return {"loss": np.float32(batch), "seen": np.int64(batch_idx + 1)}

    def validate(self, test_mode: bool) -> dict[str, Any]:
        super().validate(test_mode)
        return {"total": np.float64(self.total), "hist": np.array([1, 2])}

    def metrics_to_python(self, batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: scalar(v) for k, v in m.items()} for m in batches]  # as the Keras strategy


def test_the_loop_stores_a_strategys_numpy_metrics_as_numbers(trialkit_home: Path) -> None:
    with core.init() as ctx:
        TrainLoop(ctx, NumpyMetrics(), _settings()).run([Target(Batch(4))])
    with closing(ingested_store(trialkit_home)) as store:
        [trial] = store.list_trials()
        training = store.list_metrics(trial.id, "training")
        [val] = store.list_metrics(trial.id, "validation")
    assert [m.values["loss"] for m in training] == [1.0, 3.0]  # batches 0-2, then 3
    assert [m.values["seen"] for m in training] == [2.0, 4.0]
    assert val.values["total"] == 6.0
    assert val.values["hist"] == [1, 2]


def _bar_lines(err: str) -> list[str]:
    return [ln.rstrip() for ln in err.splitlines() if ln.startswith("training")]


def test_the_bar_shows_the_batches_of_the_target_and_the_time_left(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bar = Bar()
    bar.start(0, 4)
    for _ in range(4):
        bar.advance()
    bar.stop()
    [line] = _bar_lines(capsys.readouterr().err)
    # the label, the bar, done/total, the time left, and no metrics before any were shown
    assert re.fullmatch(r"training ━+ 4/4 batches \d:\d\d:\d\d", line), line


def test_starting_the_bar_again_moves_it_to_the_new_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bar = Bar()
    bar.start(0, 4)
    bar.advance()
    bar.start(3, 10)  # the next target (or a resumed run): 3 of its 10 batches done
    bar.show({"loss": 0.5, "batches": 3})
    bar.stop()
    [line] = _bar_lines(capsys.readouterr().err)
    assert re.fullmatch(r"training [━╺╸ ]+ 3/10 batches -:--:-- loss=0.5", line), line


def test_a_line_logged_above_the_bar_is_printed_as_given_on_a_colour_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # a terminal: the bar is drawn in colour
    bar = Bar()
    bar.start(0, 2)
    bar.log("[batch 2] validation: loss=0.5, acc=1")
    bar.stop()
    err = capsys.readouterr().err
    assert "\x1b[" in err  # coloured output indeed
    # neither read as markup nor highlighted: no colour codes inside the line
    assert "[batch 2] validation: loss=0.5, acc=1\n" in err
