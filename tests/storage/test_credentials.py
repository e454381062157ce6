"""Credentials written in checkpoint_storage (s3 access_key/secret_key) under a real master, with
moto checking every request's key and signature: the trial saves and resumes from checkpoints
with them, the master garbage-collects, serves an archive and deletes with them (also after a
restart), while the store file, describe (CLI --json and REST), the web UI's routes and the logs
show only the mask (docs/security.md "Storage credentials")."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import EXAMPLES, Master
from tests.storage.servers import Server, s3_config, s3_user_keys, start_moto_with_auth
from trialkit.master import start_background, stop_master

pytestmark = pytest.mark.integration

MASK = "********"


@pytest.fixture
def s3_auth(tmp_path: Path) -> Iterator[Server]:
    server = start_moto_with_auth(tmp_path)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def keys(s3_auth: Server, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The only credentials the server accepts; none in the environment, so nothing but the
    experiment config can give them to the trial or the master."""
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return s3_user_keys(s3_auth)


def _bucket(server: Server, keys: tuple[str, str]) -> dict[str, Any]:
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=server.url,
        aws_access_key_id=keys[0],
        aws_secret_access_key=keys[1],
        region_name="us-east-1",
    )
    client.create_bucket(Bucket="tk-credentials")
    config = s3_config(server.url, "tk-credentials", "ckpts")
    return {**config, "access_key": keys[0], "secret_key": keys[1]}


def _stored(server: Server, keys: tuple[str, str]) -> set[str]:
    """The checkpoint uuids that have files in the bucket (read with the real keys)."""
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=server.url,
        aws_access_key_id=keys[0],
        aws_secret_access_key=keys[1],
        region_name="us-east-1",
    )
    listed = client.list_objects_v2(Bucket="tk-credentials", Prefix="ckpts/")
    return {o["Key"].split("/")[1] for o in listed.get("Contents", [])}


@pytest.fixture
def master(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Master]:
    home = tmp_path / "home"
    monkeypatch.delenv("TRIALKIT_DB", raising=False)
    monkeypatch.setenv("TRIALKIT_HOME", str(home))
    client = start_background(home, slots=2)
    try:
        yield Master(home, client, {**os.environ, "TRIALKIT_HOME": str(home)})
    finally:
        client.close()
        stop_master(home)


def _files_text(home: Path) -> dict[str, str]:
    """Every file of the master's home as text (master.log, trial logs, ...) but the store,
    read by ``_store_text``, and the trials' cluster info, which must hold the credentials."""
    return {
        str(p.relative_to(home)): p.read_bytes().decode("latin-1")
        for p in home.rglob("*")
        if p.is_file() and p.name != "cluster_info.json" and not p.name.startswith("trialkit.db")
    }


def _store_text(home: Path) -> dict[str, str]:
    """Each table of the store as text, read with plain SQL."""
    with sqlite3.connect(home / "trialkit.db") as con:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: repr(con.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables}


def _assert_never_shown(master: Master, exp: int, secrets: tuple[str, str]) -> None:
    shown = {
        "describe --json": master.cli("experiment", "describe", str(exp), "--json").stdout,
        "describe": master.cli("experiment", "describe", str(exp)).stdout,
        "checkpoint list": master.cli("checkpoint", "list", str(exp), "--json").stdout,
        "REST": json.dumps(master.describe(exp)),
        "REST summary": json.dumps(
            master.client.request("GET", f"/api/v1/experiments/{exp}/summary")
        ),
        "REST list": json.dumps(master.client.request("GET", "/api/v1/experiments")),
        **_files_text(master.home),
        **{
            f"store table {t}": text
            for t, text in _store_text(master.home).items()
            if t != "storage_secrets"  # the one place they are kept (plain text, docs)
        },
    }
    for where, text in shown.items():
        for secret in secrets:
            assert secret not in text, f"{where} holds a credential"
    config = json.loads(shown["describe --json"])["experiment"]["config"]
    assert config["checkpoint_storage"]["access_key"] == MASK
    assert config["checkpoint_storage"]["secret_key"] == MASK
    assert all(secret in _store_text(master.home)["storage_secrets"] for secret in secrets)


def test_config_credentials_work_everywhere_and_are_shown_nowhere(
    s3_auth: Server, keys: tuple[str, str], master: Master, tmp_path: Path
) -> None:
    storage = _bucket(s3_auth, keys)
    model_dir = tmp_path / "model"
    shutil.copytree(EXAMPLES / "core_api", model_dir)
    config = {
        "name": "credentials",
        "entrypoint": "python3 2_checkpoints.py",
        "searcher": {"name": "single", "metric": "x", "max_length": 1},
        "max_restarts": 0,
        "checkpoint_storage": {**storage, "save_trial_latest": 1, "save_trial_best": 0},
    }
    path = tmp_path / "config.json"  # outside the model directory, which is uploaded
    path.write_text(json.dumps(config))
    exp = int(master.cli("experiment", "create", str(path), str(model_dir)).stdout.split()[-1])
    master.wait_for(
        lambda: bool(master.describe(exp)["checkpoints"]), timeout=120, what="a checkpoint"
    )
    master.cli("experiment", "pause", str(exp))  # the next run restores with the keys too
    master.wait_for(
        lambda: master.describe(exp)["trials"][0]["state"] == "PAUSED", 120, "trial PAUSED"
    )
    master.cli("experiment", "activate", str(exp))
    done = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=180)
    assert done["experiment"]["state"] == "COMPLETED", done
    trial = done["trials"][0]
    info = master.home / "trials" / str(trial["id"]) / "cluster_info.json"
    assert keys[1] in info.read_text()  # the trial got the real keys, privately
    assert stat.S_IMODE(info.stat().st_mode) == 0o600

    # GC at the end of the experiment deleted all but the latest from the bucket.
    reported = json.loads(master.cli("checkpoint", "list", str(exp), "--json").stdout)
    assert len(reported) == 1
    latest = {reported[0]["uuid"]}
    master.wait_for(lambda: _stored(s3_auth, keys) == latest, 60, "GC to delete the files")
    assert all(c["storage"]["secret_key"] == MASK for c in reported)
    _assert_never_shown(master, exp, keys)

    # This process has no credentials: the download goes through the master.
    dest = tmp_path / "dl"
    proc = master.cli("checkpoint", "download", reported[0]["uuid"], "-o", str(dest))
    assert "downloading through the master" in proc.stderr
    assert (dest / "state").read_text() == f"100,100,{trial['id']}"

    # After a restart the master still has them: deleting the experiment empties the bucket.
    master.client.close()
    stop_master(master.home)
    master.client = start_background(master.home, slots=2)
    master.cli("experiment", "delete", "--yes", str(exp))
    assert _stored(s3_auth, keys) == set()
    assert _store_text(master.home)["storage_secrets"] == "[]"
