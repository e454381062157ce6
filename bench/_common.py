"""Helpers the benchmarks share: the CLI path, a clean environment, a broken-run error, the
paired-rounds ratio with its confidence interval, and the overhead benches' lockstep rounds
with their ratio table."""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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


# Lockstep rounds --------------------------------------------------------------------------------
# The overhead benches (pytorch, deepspeed, keras, lightning) run each contender once a round in
# a fresh process, in lockstep with a hand-written step: every batch gives a (contender s,
# partner s) pair. What follows runs the rounds and turns the pairs into the printed figures.

Pairs = list[tuple[float, float]]  # (contender s, partner s) per timed batch
Sums = list[tuple[float, float]]  # the same, summed over blocks of consecutive batches


def lockstep_rounds(
    contenders: Sequence[str], rounds: int, run_round: Callable[[str], dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Each contender's results, one per round (``run_round(name)``; a result with
    ``missing`` is left out). The order reverses every other round, so no contender always
    runs first on a machine that warms up or drifts."""
    order = list(contenders)
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in order}
    for r in range(rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            started = time.monotonic()
            got = run_round(name)
            # progress on stderr: a run cut short by a timeout still shows how far it got
            print(
                f"round {r + 1}/{rounds} {name}: {time.monotonic() - started:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            if not got.get("missing"):
                results[name].append(got)
    return results


def block_sums(pairs: Pairs, block: int = 25) -> Sums:
    """Blocks of ``block`` consecutive batches keep a report batch and its neighbours together."""
    blocks = [pairs[i : i + block] for i in range(0, len(pairs), block)]
    return [(sum(c for c, _ in b), sum(h for _, h in b)) for b in blocks]


def ratio(sums: Sums) -> float:
    return sum(c for c, _ in sums) / sum(h for _, h in sums)


def resampled_ratios(rounds: list[Sums], n: int = 2000) -> list[float]:
    """Bootstrap of the ratio that resamples rounds (processes), then blocks within each, so
    the interval covers the spread between processes as well as within one."""
    rng = random.Random(0)
    out = []
    for _ in range(n):
        chosen: Sums = []
        for blocks in rng.choices(rounds, k=len(rounds)):
            chosen += rng.choices(blocks, k=len(blocks))
        out.append(ratio(chosen))
    return out


def interval(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[int(0.025 * len(ordered))], ordered[int(0.975 * len(ordered)) - 1]


def weights_verdict(results: list[dict[str, Any]]) -> str:
    """How a contender's final weights compared with its partner's, the same in every round."""
    seen = {
        "bitwise equal" if r["bitwise"] else ("allclose" if r.get("close") else "DIFFER")
        for r in results
    }
    return seen.pop() if len(seen) == 1 else "DIFFER between rounds"


@dataclass(frozen=True)
class RatioFigures:
    """The ratio of total contender time to total partner time, with its bootstrap samples."""

    point: float
    boots: list[float]
    ms: float  # median contender ms per batch
    partner_ms: float  # median partner ms per batch

    @classmethod
    def of(cls, results: list[dict[str, Any]], block: int = 25) -> RatioFigures:
        rounds = [block_sums([(c, h) for c, h in r["pairs"]], block) for r in results]
        pairs = [(c, h) for r in results for c, h in r["pairs"]]
        return cls(
            point=ratio([b for r in rounds for b in r]),
            boots=resampled_ratios(rounds),
            ms=statistics.median(c for c, _ in pairs) * 1e3,
            partner_ms=statistics.median(h for _, h in pairs) * 1e3,
        )

    def net_of(self, control: RatioFigures) -> tuple[float, float, float]:
        """This ratio over the control's (the method's own bias taken out), with its interval."""
        low, high = interval([a / b for a, b in zip(self.boots, control.boots, strict=True)])
        return self.point / control.point, low, high


def print_ratio_table(
    results: dict[str, list[dict[str, Any]]],
    unit: str = "batch",
    partner_column: str | None = "hand-written",
    missing: str = "(no result)",
) -> dict[str, RatioFigures]:
    """One row per contender: ms per ``unit``, the partner's (unless ``partner_column`` is
    None), the ratio, its 95 % interval and the weights verdict; the figures by contender."""
    ratio_head = f"{'ratio':>8}" if partner_column else f"{'vs ' + 'hand-written':>16}"
    partner_head = f" {partner_column:>13}" if partner_column else ""
    head = (
        f"{'loop':24} {'ms/' + unit:>9}{partner_head} {ratio_head} {'95 % interval':>17}  weights"
    )
    print(head)
    print("-" * len(head))
    figures: dict[str, RatioFigures] = {}
    for name, got in results.items():
        if not got:
            print(f"{name:24} {missing}")
            continue
        f = figures[name] = RatioFigures.of(got)
        low, high = interval(f.boots)
        span = f"[{low:.4f}, {high:.4f}]"
        partner = f" {f.partner_ms:13.3f}" if partner_column else ""
        width = 8 if partner_column else 16
        print(
            f"{name:24} {f.ms:9.3f}{partner} {f.point:{width}.4f} {span:>17}  "
            f"{weights_verdict(got)}"
        )
    return figures


#: The admin token of an in-process master served by ``served_master``.
BENCH_TOKEN = "bench-admin-token"


@contextmanager
def served_master(home: Path) -> Iterator[tuple[str, Any]]:
    """The master app over a store in ``home``, served by uvicorn on loopback in a thread (no
    engine loop, so nothing is scheduled): (url, store). Its token is ``BENCH_TOKEN``."""
    import threading

    import uvicorn

    from trialkit.master.api._app import create_app
    from trialkit.master.engine._engine import Engine, EngineSettings
    from trialkit.rendezvous import free_port
    from trialkit.store import Store

    store = Store.at(home)
    engine = Engine(
        store,
        EngineSettings(home=home, slots=2),
        "http://127.0.0.1:9",
        BENCH_TOKEN,
        home / "m.json",
    )
    port = free_port()
    config = uvicorn.Config(
        create_app(store, engine, BENCH_TOKEN), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise BenchmarkBroken("the master did not start in 30 s")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", store
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        store.close()


def src_env(home: Path, src: str) -> dict[str, str]:
    """``clean_env(home)`` with the trialkit of source tree ``src`` first on the path."""
    env = clean_env(home)
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    return env


def run_cli(home: Path, src: str, *args: str) -> None:
    """``trialkit ARGS`` of source tree ``src`` for ``home``; BenchmarkBroken when it fails."""
    import subprocess

    cmd = [sys.executable, cli_path(), *args]
    done = subprocess.run(cmd, env=src_env(home, src), capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchmarkBroken(f"trialkit {' '.join(args)}: {done.stdout}{done.stderr}")


@contextmanager
def master_process(home: Path, src: str) -> Iterator[dict[str, Any]]:
    """A real master (``trialkit master up``, never idle-stopped) of source tree ``src`` for
    ``home``: its master.json (url, token, pid); stopped on exit."""
    import json

    run_cli(home, src, "master", "up", "--idle-timeout", "0")
    try:
        yield json.loads((home / "master.json").read_text())
    finally:
        run_cli(home, src, "master", "down")
