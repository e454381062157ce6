"""`trialkit master up` upgrades a store made by main before migrations (e202128; the fixtures in
test_migrations_data were made by its master, see make_fixtures.py) on SQLite and on PostgreSQL:
every experiment, trial, metric, checkpoint and log line reads back through the CLI, and ids of
deleted experiments are not handed out again."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from trialkit.cli import main as cli_main
from trialkit.client import stop_master
from trialkit.store import Store
from trialkit.store._schema import HEAD_REVISION

from .conftest import EXAMPLES

pytestmark = pytest.mark.integration
DATA = Path(__file__).resolve().parent / "test_migrations_data"
CORE = EXAMPLES / "core_api"

Query = Callable[[str], Sequence[Sequence[Any]]]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _snapshot(query: Query) -> dict[str, Any]:
    """What the old store holds, read with plain SQL before the new code touches it."""
    metrics: dict[int, list[Any]] = {}
    for trial, group, steps, values in query(
        'SELECT trial_id, "group", steps_completed, "values" FROM metrics'
    ):
        metrics.setdefault(trial, []).append([group, steps, _json(values)])
    logs: dict[int, list[str]] = {}
    for trial, line in query("SELECT trial_id, line FROM logs ORDER BY id"):
        logs.setdefault(trial, []).append(line)
    return {
        "experiments": [
            list(r) for r in query("SELECT id, name, state FROM experiments ORDER BY id")
        ],
        "trials": [
            [i, e, s, _json(h)]
            for i, e, s, h in query(
                "SELECT id, experiment_id, state, hparams FROM trials ORDER BY id"
            )
        ],
        "checkpoints": sorted(r[0] for r in query("SELECT uuid FROM checkpoints")),
        "metrics": {t: sorted(m, key=json.dumps) for t, m in metrics.items()},
        "logs": logs,
    }


def _cli(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "trialkit.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, f"trialkit {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _read_cli(env: dict[str, str], *args: str) -> str:
    """What a read command of the CLI prints, run in this process: the read-back below makes
    ~45 of them, and a process start each is most of what the test would cost."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        for name in ("TRIALKIT_HOME", "TRIALKIT_DB"):
            if name in env:
                mp.setenv(name, env[name])
            else:
                mp.delenv(name, raising=False)
        with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as exited:
            cli_main(list(args))
    code = exited.value.code or 0
    assert code == 0, f"trialkit {' '.join(args)} ({code}):\n{out.getvalue()}\n{err.getvalue()}"
    return out.getvalue()


def _seen_through_cli(env: dict[str, str]) -> dict[str, Any]:
    """The same facts, read back through the CLI of the new code."""
    listed = json.loads(_read_cli(env, "experiment", "list", "--json"))
    trials, checkpoints, metrics, logs = [], [], {}, {}
    for exp in listed:
        desc = json.loads(_read_cli(env, "experiment", "describe", str(exp["id"]), "--json"))
        trials += [[t["id"], exp["id"], t["state"], t["hparams"]] for t in desc["trials"]]
        checkpoints += [c["uuid"] for c in desc["checkpoints"]]
        for t in desc["trials"]:
            shown = json.loads(
                _read_cli(env, "trial", "describe", str(t["id"]), "--metrics", "--json")
            )
            reports = shown["validation_metrics"] + shown["training_metrics"]
            metrics[t["id"]] = sorted(
                ([m["group"], m["steps_completed"], m["values"]] for m in reports), key=json.dumps
            )
            logs[t["id"]] = _read_cli(env, "trial", "logs", str(t["id"])).splitlines()
    return {
        "experiments": [[e["id"], e["name"], e["state"]] for e in listed],
        "trials": trials,
        "checkpoints": sorted(checkpoints),
        "metrics": metrics,
        "logs": logs,
    }


def _check_upgrade(env: dict[str, str], before: dict[str, Any]) -> None:
    home = Path(env["TRIALKIT_HOME"])
    try:
        up = _cli(env, "master", "up", "--slots", "2")
        assert "master running" in up
        assert (
            f"schema upgraded from revision 0001 (made before migrations) to {HEAD_REVISION}"
            in ((home / "master.log").read_text())
        )
        after = _seen_through_cli(env)
        assert len(before["experiments"]) == 2 and len(before["checkpoints"]) == 40
        for key in ("experiments", "trials", "checkpoints", "metrics"):
            assert after[key] == before[key], key
        for trial, lines in before["logs"].items():  # every stored line is printed, in order
            printed = iter(after["logs"][trial])
            assert all(line in printed for line in lines), trial
        _check_ids_not_reused(env)
    finally:
        stop_master(home)


def _create(env: dict[str, str]) -> int:
    out = _cli(env, "experiment", "create", str(CORE / "1_metrics.yaml"), str(CORE), "-f")
    assert "ended COMPLETED" in out
    match = re.search(r"Created experiment (\d+)", out)
    assert match, out
    return int(match.group(1))


def _check_ids_not_reused(env: dict[str, str]) -> None:
    made = _create(env)
    assert made == 3
    _cli(env, "experiment", "delete", str(made), "--yes")
    assert _create(env) == 4  # not 3 again


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    env = {**os.environ, "TRIALKIT_HOME": str(home)}
    env.pop("TRIALKIT_DB", None)
    env.pop("TRIALKIT_CLUSTER_INFO", None)
    yield env


def test_master_up_upgrades_a_sqlite_store_made_by_main(env: dict[str, str]) -> None:
    db = Path(env["TRIALKIT_HOME"]) / "trialkit.db"
    shutil.copy(DATA / "pre_alembic.db", db)
    with sqlite3.connect(db) as con:
        before = _snapshot(lambda sql: con.execute(sql).fetchall())
    _check_upgrade(env, before)


def _load_dump(postgres: Any, url: str) -> None:
    psql = shutil.which("psql") or str(Path(postgres._bin) / "psql")
    subprocess.run(
        [
            psql,
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            url,
            "-f",
            str(DATA / "pre_alembic_pg.sql"),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def test_master_up_upgrades_a_postgres_store_made_by_main(
    env: dict[str, str], postgres: Any
) -> None:
    import psycopg

    url = postgres.new_database()
    _load_dump(postgres, url)
    with psycopg.connect(url) as con:
        before = _snapshot(lambda sql: con.execute(sql).fetchall())
    env["TRIALKIT_DB"] = url
    _check_upgrade(env, before)
    Store(url).close()  # opening an up-to-date store again changes nothing
    with psycopg.connect(url) as con:
        assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (HEAD_REVISION,)
        ]
        assert con.execute("SELECT count(*) FROM experiments").fetchall() == [(3,)]  # 1, 2, 4


def test_master_up_refuses_a_store_newer_than_the_code(env: dict[str, str]) -> None:
    db = Path(env["TRIALKIT_HOME"]) / "trialkit.db"
    shutil.copy(DATA / "pre_alembic.db", db)
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) PRIMARY KEY)")
        con.execute("INSERT INTO alembic_version VALUES ('0042')")
    for args in (("master", "up"), ("master", "up", "--foreground")):
        proc = subprocess.run(
            [sys.executable, "-m", "trialkit.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode != 0
        said = [ln for ln in proc.stderr.splitlines() if "error" in ln.lower()]
        assert len(said) == 1, proc.stderr  # one line, no traceback
        assert (
            f"schema revision 0042, newer than this trialkit knows (head {HEAD_REVISION})"
            in said[0]
        )
        assert "Traceback" not in proc.stderr


OPEN = "import sys; from trialkit.store import Store; Store(sys.argv[1]).close()"


def test_concurrent_opens_of_a_new_postgres_store_migrate_once(postgres: Any) -> None:
    import psycopg

    url = postgres.new_database()
    procs = [
        subprocess.Popen([sys.executable, "-c", OPEN, url], stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    with psycopg.connect(url) as con:
        assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (HEAD_REVISION,)
        ]
