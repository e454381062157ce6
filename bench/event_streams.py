"""The web UI's event streams on an idle master: its CPU with no stream open, then with 100
server-sent event streams open (half on experiments' pages, half on the experiments list) while
nothing changes, over ~10 s each; goal: 100 streams under 5 % of a core above the idle master.

A real master (``trialkit master up``, in the background) over a store written beforehand (20
finished experiments of 5 trials each: nothing runs). With ``--compare SRC``, the same is
measured first with the master of another source tree (``SRC`` is put first on its PYTHONPATH,
e.g. a ``git archive`` of main's ``src``), and the ratio printed.

    python bench/event_streams.py [--streams 100] [--seconds 10] [--compare /tmp/main/src]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import BenchmarkBroken, master_process, src_env

EXPERIMENTS = 20
TRIALS = 5
GOAL_CORES = 0.05


def populate(home: Path, src: str) -> None:
    """Finished experiments written straight into the home's store (by the master's code)."""
    script = f"""
import uuid
from pathlib import Path
from trialkit.store import ExperimentState, NewMetric, Store, TrialState
store = Store.at(Path({str(home)!r}))
for e in range({EXPERIMENTS}):
    exp = store.create_experiment(name=f"events-{{e}}", config={{
        "name": f"events-{{e}}", "entrypoint": "python3 train.py",
        "searcher": {{"name": "random", "metric": "loss", "max_trials": {TRIALS},
                     "max_length": {{"batches": 10}}}},
        "hyperparameters": {{"lr": {{"type": "double", "minval": 0.001, "maxval": 0.1}}}}}})
    for i in range({TRIALS}):
        t = store.create_trial(experiment_id=exp.id, request_id=uuid.uuid4().hex,
                               hparams={{"lr": 0.01}}, seed=i)
        store.add_metrics([NewMetric(t.id, "validation", 10, {{"loss": 0.5}})])
        store.update_trial(t.id, state=TrialState.COMPLETED, run_id=1)
    store.update_experiment(exp.id, state=ExperimentState.COMPLETED, progress=1.0)
store.close()
"""
    subprocess.run(
        [sys.executable, "-c", script], env=src_env(home, src), check=True, capture_output=True
    )


def _cpu_seconds(proc: object) -> float:
    times = proc.cpu_times()  # type: ignore[attr-defined]
    return float(times.user + times.system)


async def _streams(url: str, token: str, count: int, seconds: float, proc: object) -> float:
    """Cores the master used over ``seconds`` with ``count`` event streams open and idle."""
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=count + 10, max_keepalive_connections=count + 10)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, limits=limits, timeout=None, trust_env=False
    ) as client:
        opened: list[asyncio.Event] = [asyncio.Event() for _ in range(count)]

        async def hold(i: int) -> None:
            path = (
                f"/api/v1/experiments/{i % EXPERIMENTS + 1}/events"
                if i % 2
                else "/api/v1/events/experiments"
            )
            async with client.stream("GET", path) as resp:
                if resp.status_code != 200:
                    raise BenchmarkBroken(f"{path}: HTTP {resp.status_code}")
                async for line in resp.aiter_lines():
                    if line.startswith("data:"):
                        opened[i].set()

        tasks = [asyncio.create_task(hold(i)) for i in range(count)]
        try:
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in opened)), 60)
            await asyncio.sleep(2)  # past the first events
            return await _cores(proc, seconds)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def _cores(proc: object, seconds: float) -> float:
    before, t0 = _cpu_seconds(proc), time.monotonic()
    await asyncio.sleep(seconds)
    return (_cpu_seconds(proc) - before) / (time.monotonic() - t0)


def measure(src: str, streams: int, seconds: float) -> tuple[float, float]:
    """(idle master's cores, cores with the streams open) for the master of ``src``."""
    import psutil

    with tempfile.TemporaryDirectory(prefix="event-streams-") as tmp:
        home = Path(tmp)
        populate(home, src)
        with master_process(home, src) as info:
            proc = psutil.Process(int(info["pid"]))
            time.sleep(2)
            idle = asyncio.run(_cores(proc, seconds))
            busy = asyncio.run(_streams(info["url"], info["token"], streams, seconds, proc))
    return idle, busy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--compare", metavar="SRC", default=None, help="another tree's src")
    args = parser.parse_args()
    rows = []
    if args.compare:
        rows.append(
            ("compared (" + args.compare + ")", *measure(args.compare, args.streams, args.seconds))
        )
    here = str(Path(__file__).resolve().parents[1] / "src")
    rows.append(("this tree", *measure(here, args.streams, args.seconds)))
    print(f"master CPU (cores) over {args.seconds:.0f} s, {args.streams} idle event streams:")
    for name, idle, busy in rows:
        print(
            f"  {name}: idle {idle:.3f}, with streams {busy:.3f}, streams' part {busy - idle:.3f}"
        )
    part = rows[-1][2] - rows[-1][1]
    if len(rows) == 2:
        before = rows[0][2] - rows[0][1]
        print(f"streams' part, this tree / compared: {part / before:.3f}" if before > 0 else "")
    print(
        f"goal: streams' part < {GOAL_CORES:.2f} cores: {'met' if part < GOAL_CORES else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
