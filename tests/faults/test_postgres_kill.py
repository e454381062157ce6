"""Fault injection (issue 31, item 9): the master's PostgreSQL server killed with SIGKILL and
restarted on the same port and data directory at seeded random points of a running search,
KILLS times.

After every restart the master serves requests from the store again and the trials' newly
acknowledged metric reports show that they kept training; when the search ends, every metric
batch the master acknowledged is stored exactly once and every registered checkpoint has all its
files at their sizes (the checks of test_kill). A summary line with the figures is printed when
the module ends.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.postgres_server import PostgresServer
from trialkit.errors import APIError

from .conftest import Master
from .kill_support import Run, print_line

pytestmark = pytest.mark.integration

KILLS = 10
TRIALS = 4  # on the master's 2 slots: two waves, so kills land in starts and ends of trials too
TOTAL = 150
STEP_SECONDS = 0.1
#: Seconds between a restart's recovery and the next kill, and how long the server stays down.
UP_SECONDS = (0.5, 2.0)
DOWN_SECONDS = (0.0, 1.0)
FIGURES: Counter[str] = Counter()
WHEN: dict[str, Any] = {}


@pytest.fixture(scope="module", autouse=True)
def _summary(request: pytest.FixtureRequest) -> Iterator[None]:
    """The figures the closing note quotes, printed once the module's tests are done."""
    yield
    print_line(
        request.config,
        f"postgres kills: {FIGURES['faults']} kill -9 + restarts of the PostgreSQL server during "
        f"{FIGURES['experiments']} search(es) of {FIGURES['trials']} trials; longest wait for the "
        f"master to serve again {WHEN.get('reconnect', 0.0):.1f} s; trial restarts "
        f"{FIGURES['trial_restarts']}; acknowledged metrics {FIGURES['acked']} "
        f"({FIGURES['acked_after_restarts']} after restarts), lost {FIGURES['lost']}, duplicated "
        f"rows {FIGURES['duplicated']}; checkpoints registered {FIGURES['checkpoints']}, partial "
        f"{FIGURES['partial']}; not ended {FIGURES['not_ended']}; experiment ended "
        f"{WHEN.get('state', '-')}; wall time {WHEN.get('wall', 0.0):.1f} s",
    )


def test_postgres_killed_and_restarted_mid_search(
    pg_master: Master, postgres: PostgresServer, tmp_path: Path
) -> None:
    rng = random.Random("postgres-kill")
    started = time.monotonic()
    run = Run(pg_master, tmp_path, FIGURES, TOTAL, STEP_SECONDS=STEP_SECONDS, CKPT_EVERY=10)
    config = run.config(
        searcher={"name": "grid", "metric": "loss", "max_length": {"batches": TOTAL}},
        hyperparameters={"x": {"type": "categorical", "vals": list(range(TRIALS))}},
    )
    exp = pg_master.create(config, run.model)
    run.wait_event(1, 0, "report", 1)
    for _ in range(KILLS):
        time.sleep(rng.uniform(*UP_SECONDS))
        assert _state(pg_master, exp) == "ACTIVE", "the search ended before the kills did"
        postgres.kill()
        FIGURES["faults"] += 1
        time.sleep(rng.uniform(*DOWN_SECONDS))
        acked = len(run.acked_reports())
        postgres.start()
        WHEN["reconnect"] = max(WHEN.get("reconnect", 0.0), _until_served(pg_master, exp))
        _until_more_acked(run, acked)
        FIGURES["acked_after_restarts"] += len(run.acked_reports()) - acked
    desc = run.check(exp)
    WHEN["state"] = desc["experiment"]["state"]
    WHEN["wall"] = time.monotonic() - started
    FIGURES["trials"] += len(desc["trials"])
    FIGURES["trial_restarts"] += sum(t["restarts"] for t in desc["trials"])
    assert desc["experiment"]["state"] == "COMPLETED"
    assert [t["state"] for t in desc["trials"]] == ["COMPLETED"] * TRIALS
    # The trials rode over the outages: none failed for them, each reached its length.
    assert FIGURES["trial_restarts"] == 0, [t.get("error") for t in desc["trials"]]
    assert all(t["latest_validation"]["steps_completed"] == TOTAL for t in desc["trials"])


def _state(master: Master, exp: int) -> str:
    return str(master.describe(exp)["experiment"]["state"])


def _until_served(master: Master, exp: int, timeout: float = 30) -> float:
    """Seconds until the master answers a request that reads the store again."""
    start = time.monotonic()
    while True:
        try:
            _state(master, exp)
            return time.monotonic() - start
        except APIError as e:
            if time.monotonic() - start > timeout:
                raise AssertionError(f"the master did not reconnect in {timeout} s: {e}") from e
            time.sleep(0.05)


def _until_more_acked(run: Run, acked: int, timeout: float = 30) -> None:
    """Wait until the trials have reports acknowledged since the restart: they kept training."""
    deadline = time.monotonic() + timeout
    while len(run.acked_reports()) <= acked:
        if time.monotonic() > deadline:
            raise AssertionError(f"no metric report acknowledged in {timeout} s after a restart")
        time.sleep(0.05)
