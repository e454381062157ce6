"""Metric averaging and display for the loop: per-batch averages, log lines, the progress bar."""

from __future__ import annotations

from typing import Any


def report_period(value: Any) -> str | int:
    """A callback's ``train_metrics_report_period``: ``"epoch"`` or a positive batch count."""
    if value == "epoch":
        return "epoch"
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ValueError(
        f'train_metrics_report_period: got {value!r}; expected "epoch" or a positive number of '
        "batches"
    )


def scalar(value: Any) -> Any:
    """A plain number (or list) from a tensor or array; anything else unchanged."""
    if hasattr(value, "detach"):
        value = value.detach()
        return value.item() if value.numel() == 1 else value.cpu().tolist()
    if hasattr(value, "item") and getattr(value, "size", 2) == 1:
        return value.item()
    return value


def average_batches(batch_metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean over batches of each scalar metric (None where a metric is not a number)."""
    out: dict[str, Any] = {}
    # Every key any batch has: a worker that reports no metrics (a DeepSpeed pipeline stage
    # other than the last) contributes an empty dict.
    for key in dict.fromkeys(k for m in batch_metrics for k in m):
        values: list[Any] = [m[key] for m in batch_metrics if m.get(key) is not None]
        if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            out[key] = sum(values) / len(values)
        else:
            out[key] = None
    return out


_COUNTERS = ("batches", "epochs", "records")


def format_metrics(metrics: dict[str, Any]) -> str:
    """``loss=0.123, accuracy=0.9`` for a log line (the step counters left out)."""
    return ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in metrics.items()
        if k not in _COUNTERS
    )


class Bar:
    """A progress bar on the terminal for local runs; updated per batch, drawn 10 times a second."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("training"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("batches"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[metrics]}"),
            console=Console(stderr=True),
            transient=False,
        )
        self._task: Any = None

    def start(self, done: int, total: int) -> None:
        if self._task is None:
            self._progress.start()
            self._task = self._progress.add_task("train", total=total, completed=done, metrics="")
        else:
            self._progress.update(self._task, total=total, completed=done)

    def advance(self) -> None:
        self._progress.advance(self._task)

    def show(self, metrics: dict[str, Any]) -> None:
        self._progress.update(self._task, metrics=format_metrics(metrics))

    def log(self, line: str) -> None:
        """A line printed above the bar (a plain log line would tear it)."""
        self._progress.console.print(line, markup=False, highlight=False)

    def stop(self) -> None:
        if self._task is not None:
            self._progress.stop()
