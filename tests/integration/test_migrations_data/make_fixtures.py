"""Regenerate the pre-migration stores that tests/integration/test_migrations.py upgrades.

Runs trialkit as of main e202128 (the last commit before schema migrations: its master, CLI and
examples, extracted with ``git archive``) to run two experiments through a real master, once on
SQLite and once on a real PostgreSQL server, then saves ``pre_alembic.db`` (a copy of the SQLite
store) and ``pre_alembic_pg.sql`` (``pg_dump`` of the PostgreSQL one) here. Run from the repo
root with the dev Python: ``python tests/integration/test_migrations_data/make_fixtures.py``.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OLD_COMMIT = "e202128"
sys.path.insert(0, str(REPO))  # for tests.postgres_server

from tests.postgres_server import PostgresServer  # noqa: E402


def extract_old_tree(root: Path) -> Path:
    old = root / "old"
    old.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", OLD_COMMIT, "src", "examples"],
        check=True,
        capture_output=True,
        timeout=60,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True, timeout=60)
    return old


def run_old(old: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "trialkit.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"old trialkit {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def make_store(old: Path, home: Path, db_url: str | None) -> None:
    """Two experiments through the old master: a 4-trial search with checkpoints, one single."""
    env = {**os.environ, "PYTHONPATH": str(old / "src"), "TRIALKIT_HOME": str(home)}
    env.pop("TRIALKIT_DB", None)
    if db_url:
        env["TRIALKIT_DB"] = db_url
    core = old / "examples" / "core_api"
    run_old(old, env, "master", "up", "--slots", "2")
    try:
        for config in ("3_hpsearch.yaml", "1_metrics.yaml"):
            print(run_old(old, env, "experiment", "create", str(core / config), str(core), "-f"))
    finally:
        run_old(old, env, "master", "down")


def pg_tool(server: PostgresServer, name: str) -> str:
    """A PostgreSQL client tool: beside the server's binaries, else on PATH."""
    beside = server._bin / name
    return str(beside) if beside.exists() else (shutil.which(name) or name)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="trialkit-fixtures-") as tmp:
        root = Path(tmp)
        old = extract_old_tree(root)
        make_store(old, root / "home-sqlite", None)
        target = HERE / "pre_alembic.db"
        target.unlink(missing_ok=True)
        with sqlite3.connect(root / "home-sqlite" / "trialkit.db") as con:
            con.execute("VACUUM INTO ?", (str(target),))

        server = PostgresServer()
        try:
            url = server.new_database()
            make_store(old, root / "home-pg", url)
            dump = subprocess.run(
                [pg_tool(server, "pg_dump"), "--no-owner", "--no-privileges", url],
                check=True,
                capture_output=True,
                text=True,
                timeout=120,
            ).stdout
            (HERE / "pre_alembic_pg.sql").write_text(dump)
        finally:
            server.stop()
    print(f"wrote {target} and {HERE / 'pre_alembic_pg.sql'}")


if __name__ == "__main__":
    main()
