"""``trialkit checkpoint download`` against a real master (issue 12 item 11): it copies regular
files only (a link to /etc/passwd-like files stays behind) and reads only from the experiment's
configured checkpoint storage unless the user names another with --storage-path (a trial
cannot register a checkpoint elsewhere: the master answers 403)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.integration.conftest import Master
from trialkit.errors import APIError
from trialkit.storage import build

pytestmark = pytest.mark.integration

SLEEPER = {
    "name": "ckpt-download",
    "entrypoint": ["python3", "-c", "import time; time.sleep(300)"],
    "searcher": {"name": "single", "metric": "loss", "max_length": 1},
}


def report(master: Master, uuid: str, storage: dict[str, object]) -> None:
    """Report a checkpoint as trial 1's current run (the master refuses other runs' reports)."""

    def run_id() -> int:
        return int(master.client.request("GET", "/api/v1/trials/1")["trial"]["run_id"])

    master.wait_for(lambda: run_id() >= 1, what="trial 1 to start its run")
    body = {"uuid": uuid, "run_id": run_id(), "steps_completed": 1, "resources": {}}
    master.client.request(
        "POST", "/api/v1/trials/1/checkpoints", json_body={**body, "storage": storage}
    )


def test_download_stays_inside_the_checkpoint_and_its_storage(
    master: Master, tmp_path: Path
) -> None:
    exp = master.client.request("POST", "/api/v1/experiments", json_body={"config": SLEEPER})
    storage = exp["experiment"]["config"]["checkpoint_storage"]
    base = build(storage).base_path  # type: ignore[attr-defined]
    secret = tmp_path / "secret.txt"
    secret.write_text("private")
    ckpt = base / "c1"
    ckpt.mkdir(parents=True)
    (ckpt / "model.pt").write_bytes(b"weights")
    (ckpt / "passwd").symlink_to(secret)
    (ckpt / "dangling").symlink_to(base / "nowhere")
    report(master, "c1", storage)

    out = tmp_path / "out"
    proc = master.cli("checkpoint", "download", "c1", "-o", str(out))
    assert "Traceback" not in proc.stderr
    assert sorted(os.listdir(out)) == ["model.pt"]

    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "c2").mkdir(parents=True)
    (elsewhere / "c2" / "f").write_text("x")
    with pytest.raises(APIError) as refused:  # a trial registers only in its storage
        report(master, "c2", {"type": "shared_fs", "host_path": str(elsewhere)})
    assert refused.value.status == 403 and "checkpoint storage" in str(refused.value)
    # Its files moved by hand: --storage-path reads them where the user says they are.
    report(master, "c2", storage)
    trusted = tmp_path / "o3"
    master.cli("checkpoint", "download", "c2", "-o", str(trusted), "--storage-path", str(elsewhere))
    assert (trusted / "f").read_text() == "x"
