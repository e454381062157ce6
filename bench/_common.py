"""Helpers the benchmarks share: the CLI path, a clean environment, a broken-run error, and the
paired-rounds ratio with its confidence interval."""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path


class BenchmarkBroken(RuntimeError):
    """The benchmark could not measure (lost data, create failed, no metric in time): exit non-zero."""


def cli_path() -> str:
    """The ``trialkit`` command of this interpreter's environment."""
    beside = Path(sys.executable).with_name("trialkit")
    return str(beside) if beside.exists() else shutil.which("trialkit") or "trialkit"


def clean_env(home: Path) -> dict[str, str]:
    """This environment without any trial context, pointed at ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DET_", "TRIALKIT_"))}
    env["TRIALKIT_HOME"] = str(home)
    return env


@dataclass(frozen=True)
class PairedRatio:
    """The median over rounds of ``other / base`` measured in the same round, with a 95 %
    bootstrap interval of that median. Pairing cancels the slow drift of a shared machine (the
    same loop's speed moves by +-15 % between seconds here); the interval says how far the
    median can be trusted."""

    median: float
    low: float
    high: float
    rounds: int

    def __str__(self) -> str:
        return f"{self.median:.4f} [{self.low:.4f}, {self.high:.4f}]"


def paired_ratio(base: list[float], other: list[float], *, resamples: int = 2000) -> PairedRatio:
    if len(base) != len(other) or not base:
        raise ValueError("paired_ratio needs one base and one other figure per round")
    ratios = [o / b for b, o in zip(base, other, strict=True)]
    rng = random.Random(0)  # a fixed seed: the same timings always print the same interval
    medians = sorted(
        statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples)
    )
    return PairedRatio(
        median=statistics.median(ratios),
        low=medians[int(0.025 * resamples)],
        high=medians[int(0.975 * resamples) - 1],
        rounds=len(ratios),
    )
