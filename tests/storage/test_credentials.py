"""Credentials written in checkpoint_storage (s3 access_key/secret_key, an Azure connection
string) under a real master, with moto and Azurite checking every request's key and signature: the trial saves and resumes from checkpoints
with them, the master garbage-collects, serves an archive and deletes with them (also after a
restart), while the store file, describe (CLI --json and REST), the web UI's routes and the logs
show only the mask (docs/security.md "Storage credentials")."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import EXAMPLES, Master
from tests.storage.servers import (
    AZURITE_KEY,
    Server,
    make_bucket,
    s3_config,
    s3_user_keys,
    start_moto_with_auth,
)
from trialkit.client import start_background, stop_master

pytestmark = pytest.mark.integration

MASK = "********"


@dataclass
class Credentialed:
    """A fresh bucket, the checkpoint_storage config that reaches it with credentials, the
    secret strings in that config, and what the bucket holds (read with the credentials)."""

    storage: dict[str, Any]
    secrets: tuple[str, ...]
    stored: Callable[[], set[str]]


@pytest.fixture(params=["s3", "azure"])
def bucket(
    request: pytest.FixtureRequest,
    servers: dict[str, Server],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Credentialed]:
    """Credentials the server checks, and none in the environment: nothing but the experiment
    config can give them to the trial or the master."""
    for name in [n for n in os.environ if n.startswith(("AWS_", "AZURE_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    if request.param == "azure":
        yield _azure_container(servers["azure"])
        return
    server = start_moto_with_auth(tmp_path)
    try:
        yield _s3_bucket(server, s3_user_keys(server))
    finally:
        server.stop()


def _s3_bucket(server: Server, keys: tuple[str, str]) -> Credentialed:
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

    def stored() -> set[str]:
        listed = client.list_objects_v2(Bucket="tk-credentials", Prefix="ckpts/")
        return {o["Key"].split("/")[1] for o in listed.get("Contents", [])}

    return Credentialed({**config, "access_key": keys[0], "secret_key": keys[1]}, keys, stored)


def _azure_container(server: Server) -> Credentialed:
    """Azurite checks each request's SharedKey signature: the connection string's AccountKey."""
    from azure.storage.blob import BlobServiceClient

    storage = make_bucket(server)
    container = BlobServiceClient.from_connection_string(
        storage["connection_string"]
    ).get_container_client(storage["container"])

    def stored() -> set[str]:
        return {b.name.split("/")[0] for b in container.list_blobs()}

    return Credentialed(storage, (AZURITE_KEY,), stored)


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


def _masked_fields(storage: dict[str, Any]) -> dict[str, Any]:
    """The credential fields of a (config's or checkpoint's) storage block."""
    fields = ("access_key", "secret_key", "connection_string", "credential")
    return {k: v for k, v in storage.items() if k in fields and v is not None}


def _assert_never_shown(master: Master, exp: int, bucket: Credentialed) -> None:
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
        for secret in bucket.secrets:
            assert secret not in text, f"{where} holds a credential"
    config = json.loads(shown["describe --json"])["experiment"]["config"]
    given = _masked_fields(bucket.storage)
    assert given and _masked_fields(config["checkpoint_storage"]) == dict.fromkeys(given, MASK)
    kept = _store_text(master.home)["storage_secrets"]
    assert all(secret in kept for secret in bucket.secrets)


def test_config_credentials_work_everywhere_and_are_shown_nowhere(
    bucket: Credentialed, master: Master, tmp_path: Path
) -> None:
    model_dir = tmp_path / "model"
    shutil.copytree(EXAMPLES / "core_api", model_dir)
    config = {
        "name": "credentials",
        "entrypoint": "python3 2_checkpoints.py",
        "searcher": {"name": "single", "metric": "x", "max_length": 1},
        "max_restarts": 0,
        "checkpoint_storage": {**bucket.storage, "save_trial_latest": 1, "save_trial_best": 0},
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
    assert all(s in info.read_text() for s in bucket.secrets)  # the trial's, privately
    assert stat.S_IMODE(info.stat().st_mode) == 0o600

    # GC at the end of the experiment deleted all but the latest from the bucket.
    reported = json.loads(master.cli("checkpoint", "list", str(exp), "--json").stdout)
    assert len(reported) == 1
    latest = {reported[0]["uuid"]}
    # (``tensorboard/`` holds the event files TensorboardMode.AUTO uploads: GC leaves them)
    checkpoints = lambda: bucket.stored() - {"tensorboard"}  # noqa: E731
    master.wait_for(lambda: checkpoints() == latest, 60, "GC to delete the files")
    assert set(_masked_fields(reported[0]["storage"]).values()) == {MASK}
    _assert_never_shown(master, exp, bucket)

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
    assert bucket.stored() == set()
    assert _store_text(master.home)["storage_secrets"] == "[]"
