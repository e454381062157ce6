"""The master's credentials stay with the user: a trial holds a token for its own trial only,
the admin token is in no file but the 0600 master file, and nothing under the home is readable
by other users (docs/security.md)."""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ._scripts import CONFIG, run_two_trials
from .conftest import TRIALKIT, Master, _run_master

pytestmark = pytest.mark.integration


def _trial_token(home: Path, trial_id: int) -> str:
    """The credential trial ``trial_id`` was given, read as the trial reads it."""
    info = json.loads((home / "trials" / str(trial_id) / "cluster_info.json").read_text())
    return str(info["session_token"])


def _call(master: Master, token: str, method: str, path: str, body: object = None) -> int:
    resp = httpx.request(
        method,
        master.client.url + path,
        headers={"Authorization": f"Bearer {token}"},
        json=body,
        timeout=30,
        trust_env=False,
    )
    return resp.status_code


def test_a_trial_token_reports_for_its_own_trial_only(master: Master, tmp_path: Path) -> None:
    _, desc = run_two_trials(master, tmp_path)
    ckpt_of = {c["trial_id"]: c["uuid"] for c in desc["checkpoints"]}
    token1 = _trial_token(master.home, 1)
    assert token1 != master.client.token

    # Its own trial: allowed (the experiment completing shows reporting worked too).
    assert _call(master, token1, "GET", "/api/v1/trials/1/metrics") == 200
    assert _call(master, token1, "GET", f"/api/v1/checkpoints/{ckpt_of[1]}") == 200
    # Anything that is not its own trial's: refused.
    config = {**CONFIG, "entrypoint": "id > owned.txt"}
    assert _call(master, token1, "POST", "/api/v1/experiments", {"config": config}) == 403
    assert _call(master, token1, "GET", "/api/v1/trials/2") == 403
    assert _call(master, token1, "GET", "/api/v1/trials/2/logs") == 403
    metrics = {"reports": [{"group": "training", "steps_completed": 9, "metrics": {}}]}
    assert _call(master, token1, "POST", "/api/v1/trials/2/metrics", metrics) == 403
    assert _call(master, token1, "GET", f"/api/v1/checkpoints/{ckpt_of[2]}") == 403
    assert _call(master, token1, "DELETE", f"/api/v1/checkpoints/{ckpt_of[2]}") == 403
    assert _call(master, token1, "POST", "/api/v1/experiments/1/kill") == 403
    assert _call(master, token1, "POST", "/api/v1/master/shutdown") == 403
    assert _call(master, token1, "GET", "/api/v1/experiments") == 403
    # A forged token for trial 2 (trial 1's signature) is no token at all.
    forged = token1.replace("trial.1.", "trial.2.", 1)
    assert _call(master, forged, "GET", "/api/v1/trials/2") == 401


def test_the_admin_token_reaches_no_trial_file_env_or_log(master: Master, tmp_path: Path) -> None:
    run_two_trials(master, tmp_path)
    admin = master.client.token.encode()
    for trial_id in (1, 2):
        env = json.loads(
            (master.home / "trials" / str(trial_id) / "model" / "env.json").read_text()
        )
        assert env["DET_SESSION_TOKEN"] == _trial_token(master.home, trial_id)
    leaks = [
        p
        for p in master.home.rglob("*")
        if p.is_file() and p.name != "master.json" and admin in p.read_bytes()
    ]
    assert not leaks, f"the admin token is in {leaks}"
    logs = master.client.request("GET", "/api/v1/trials/1/logs")["logs"]
    assert not any(master.client.token in ln["line"] for ln in logs)


def test_a_trial_token_outlives_a_master_restart(master: Master, tmp_path: Path) -> None:
    from trialkit.client import start_background, stop_master

    run_two_trials(master, tmp_path)
    token1 = _trial_token(master.home, 1)
    master.client.close()
    assert stop_master(master.home)
    master.client = start_background(master.home, slots=2)
    assert _call(master, token1, "GET", "/api/v1/trials/1/last_validation") == 200
    assert _call(master, token1, "GET", "/api/v1/trials/2") == 403


def _group_or_other_bits(home: Path) -> list[str]:
    found = []
    for root, dirs, files in os.walk(home):
        for name in [".", *dirs, *files]:
            path = Path(root, name)
            mode = path.lstat().st_mode
            if not stat.S_ISLNK(mode) and stat.S_IMODE(mode) & 0o077:
                found.append(f"{path.relative_to(home)} {stat.S_IMODE(mode):o}")
    return found


def test_nothing_under_the_home_is_readable_by_other_users(master: Master, tmp_path: Path) -> None:
    run_two_trials(master, tmp_path)
    names = {p.name for p in master.home.rglob("*")}
    # The walk covers what matters: credentials, store, logs, exit files, checkpoints.
    assert {"master.json", "trialkit.db", "cluster_info.json", "output.log"} <= names
    assert any(n.endswith(".exit") for n in names) and (master.home / "checkpoints").is_dir()
    assert _group_or_other_bits(master.home) == []


@pytest.fixture
def shared_parent_master(monkeypatch: pytest.MonkeyPatch) -> Iterator[Master]:
    """A master whose home sits in a directory every user can enter, like /home/USER."""
    parent = Path(tempfile.mkdtemp(prefix="trialkit-shared-"))
    parent.chmod(0o755)
    monkeypatch.delenv("TRIALKIT_DB", raising=False)
    try:
        yield from _run_master(parent / "home", monkeypatch)
    finally:
        subprocess.run(["rm", "-rf", str(parent)], check=False, timeout=60)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_local_user_cannot_read_the_token_or_the_store(
    shared_parent_master: Master, tmp_path: Path
) -> None:
    master = shared_parent_master
    run_two_trials(master, tmp_path)
    nobody = pwd.getpwnam("nobody")
    targets = [
        master.home / "master.json",
        master.home / "trialkit.db",
        master.home / "trials" / "1" / "cluster_info.json",
        master.home / "trials" / "1" / "output.log",
    ]
    reader = 'for p; do cat "$p" >/dev/null 2>&1 && echo "READ $p"; done; true'
    proc = subprocess.run(
        ["sh", "-c", reader, "sh", *map(str, targets)],
        user=nobody.pw_uid,
        group=nobody.pw_gid,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "", f"user nobody read: {proc.stdout}"


def test_the_token_is_checked_before_the_body_and_the_docs_need_it(master: Master) -> None:
    url = master.client.url
    bad_json = httpx.post(
        f"{url}/api/v1/experiments",
        content=b"{not json",
        headers={"content-type": "application/json"},
        trust_env=False,
        timeout=30,
    )
    assert bad_json.status_code == 401, bad_json.text
    for path in ("/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"):
        assert httpx.get(url + path, trust_env=False, timeout=30).status_code == 401, path
    spec = master.client.request("GET", "/openapi.json")
    assert "/api/v1/experiments" in spec["paths"]
    # With the token, malformed JSON is still a 4xx that names the problem.
    with_token = httpx.post(
        f"{url}/api/v1/experiments",
        content=b"{not json",
        headers={
            "content-type": "application/json",
            "Authorization": f"Bearer {master.client.token}",
        },
        trust_env=False,
        timeout=30,
    )
    assert with_token.status_code == 422


@pytest.mark.parametrize("slots", ["-4", "0", "1025", "1000000"])
def test_master_up_refuses_a_slot_count_no_machine_has(tmp_path: Path, slots: str) -> None:
    from trialkit.client import stop_master

    home = tmp_path / "home"
    try:
        proc = subprocess.run(
            [*TRIALKIT, "master", "up", "--slots", slots],
            env={**os.environ, "TRIALKIT_HOME": str(home)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        if (home / "master.json").exists():
            stop_master(home)  # a master that should not have started
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    [line] = proc.stderr.splitlines()
    assert line.startswith("trialkit: error: ") and "'--slots'" in line and slots in line, line
    assert not (home / "master.json").exists()


@pytest.mark.parametrize("slots", ["-4", "1025"])
def test_master_module_refuses_a_slot_count_in_one_line(tmp_path: Path, slots: str) -> None:
    """``python -m trialkit.master`` answers as ``trialkit master up`` does, not with a traceback."""
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, "-m", "trialkit.master", "--home", str(home), "--slots", slots],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    [line] = proc.stderr.splitlines()
    expected = f"--slots: got {slots}; expected a whole number from 1 to 1024"
    assert line == f"python -m trialkit.master: error: {expected}", line
    assert not (home / "master.json").exists()
