"""The Core API checkpoint example under a real master with its checkpoints in an object store
(moto S3, the GCS emulator, Azurite; each started here on loopback): checkpoints land in the
bucket, pause/activate resumes from one, ``checkpoint download`` reads one back, GC deletes
from the bucket, and an unreachable store is refused at ``experiment create``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import EXAMPLES, Master
from tests.storage.servers import (
    Server,
    free_port,
    make_bucket,
    missing_packages,
    s3_config,
    server_fixture,
)
from trialkit.storage import ObjectStoreManager, build

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        bool(missing_packages()), reason="needs the storage tox env's packages (moto, s3fs, ...)"
    ),
]


@pytest.fixture(scope="module", params=["s3", "gcs", "azure"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    yield from server_fixture(request.param, tmp_path_factory.mktemp(request.param))


@pytest.fixture
def bucket(server: Server, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A fresh bucket; the server's environment (e.g. STORAGE_EMULATOR_HOST) set before the
    master starts, so its trials inherit it."""
    for k, v in server.env.items():
        monkeypatch.setenv(k, v)
    return make_bucket(server)


def _checkpoint_example(tmp_path: Path, storage: dict[str, Any]) -> tuple[Path, Path]:
    model_dir = tmp_path / "model"
    shutil.copytree(EXAMPLES / "core_api", model_dir)
    config = {
        "name": "object-storage",
        "entrypoint": "python3 2_checkpoints.py",
        "searcher": {"name": "single", "metric": "x", "max_length": 1},
        "max_restarts": 0,
        "checkpoint_storage": storage,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path, model_dir


def _trial(master: Master, exp: int) -> dict[str, Any]:
    master.wait_for(lambda: bool(master.describe(exp)["trials"]), timeout=60, what="a trial")
    return master.describe(exp)["trials"][0]  # type: ignore[no-any-return]


def test_experiment_checkpoints_in_the_object_store(
    server: Server, bucket: dict[str, Any], master: Master, tmp_path: Path
) -> None:
    config, model_dir = _checkpoint_example(tmp_path, bucket)
    out = master.cli("experiment", "create", str(config), str(model_dir)).stdout
    exp = int(out.strip().split()[-1])
    master.wait_for(
        lambda: bool(master.describe(exp)["checkpoints"]), timeout=120, what="a checkpoint"
    )
    master.cli("experiment", "pause", str(exp))
    master.wait_for(
        lambda: _trial(master, exp)["state"] == "PAUSED", timeout=120, what="trial PAUSED"
    )
    paused = max(master.describe(exp)["checkpoints"], key=lambda c: c["steps_completed"])
    assert paused["steps_completed"] < 100
    master.cli("experiment", "activate", str(exp))
    done = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=180)
    assert done["experiment"]["state"] == "COMPLETED", done
    trial_id = done["trials"][0]["id"]
    metrics = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": "training"}
    )["metrics"]
    resumed = [m["steps_completed"] for m in metrics if m["run_id"] == 2]
    assert resumed and min(resumed) > paused["steps_completed"], (paused, resumed)

    storage = build(bucket)
    assert isinstance(storage, ObjectStoreManager)
    ckpts = json.loads(master.cli("checkpoint", "list", str(exp), "--json").stdout)
    assert ckpts and all(storage.exists(c["uuid"]) for c in ckpts)
    assert all(c["resources"]["state"] > 0 for c in ckpts)
    last = max(ckpts, key=lambda c: c["steps_completed"])
    dest = tmp_path / "dl"
    printed = master.cli("checkpoint", "download", last["uuid"], "-o", str(dest)).stdout
    assert printed.strip() == f"checkpoint {last['uuid']} downloaded to {dest}"
    assert (dest / "state").read_text() == f"100,100,{trial_id}"
    assert json.loads((dest / "metadata.json").read_text()) == {"steps_completed": 100}

    master.cli("experiment", "gc", str(exp))
    kept = json.loads(master.cli("checkpoint", "list", str(exp), "--json").stdout)
    assert last["uuid"] in {c["uuid"] for c in kept}
    for c in ckpts:
        assert storage.exists(c["uuid"]) == (c["uuid"] in {k["uuid"] for k in kept})

    # A warm start from it into another bucket copies the checkpoint there first.
    other = make_bucket(server)
    config2, model2 = _checkpoint_example(tmp_path / "warm", other)
    warm = {**json.loads(config2.read_text())}
    warm["searcher"]["source_checkpoint_uuid"] = last["uuid"]
    config2.write_text(json.dumps(warm))
    exp2 = int(master.cli("experiment", "create", str(config2), str(model2)).stdout.split()[-1])
    assert build(other).exists(last["uuid"])
    done2 = master.wait_state(exp2, {"COMPLETED", "ERROR", "CANCELED"}, timeout=180)
    assert done2["experiment"]["state"] == "COMPLETED", done2


@pytest.mark.parametrize("server", ["s3"], indirect=True)
def test_an_unreachable_store_is_refused_at_create(
    server: Server, master: Master, tmp_path: Path
) -> None:
    for storage, expected in [
        (s3_config(f"http://127.0.0.1:{free_port()}", "b"), "still failing"),
        (s3_config(server.url, "no-such-bucket"), "no such bucket 'no-such-bucket'"),
    ]:
        config, model_dir = _checkpoint_example(tmp_path / expected[:5], storage)
        proc = master.cli("experiment", "create", str(config), str(model_dir), check=False)
        assert proc.returncode != 0
        assert expected in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        print(proc.stderr)
