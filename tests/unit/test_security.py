"""The home is private, the trial key is stable and private, and trial tokens prove one trial."""

from __future__ import annotations

import json
import os
import pwd
import stat
from pathlib import Path

import pytest

from tests.unit.client.test_client import closed_port_url, server_url  # noqa: F401  (a fixture)
from trialkit import core
from trialkit._home import HomeError, trialkit_home
from trialkit.client import MasterClient
from trialkit.master.api._auth import ADMIN, Principal, authenticate, load_trial_key, trial_token


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_home_is_created_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIALKIT_HOME", str(tmp_path / "a" / "home"))
    assert _mode(trialkit_home()) == 0o700


def test_a_local_mode_run_leaves_an_open_home_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    monkeypatch.setenv("TRIALKIT_HOME", str(home))
    with core.init() as ctx:
        ctx.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
    [journal] = (home / "local-runs").iterdir()  # the run's record, for the master to ingest
    assert _mode(journal) == 0o600 and _mode(journal.parent) == 0o700
    assert _mode(home) == 0o700


def test_the_trial_key_is_private_and_survives_a_restart(tmp_path: Path) -> None:
    key = load_trial_key(tmp_path)
    assert _mode(tmp_path / "trial.key") == 0o600
    assert load_trial_key(tmp_path) == key and len(key) == 64


def test_a_cut_short_trial_key_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "trial.key").write_text("")
    assert len(load_trial_key(tmp_path)) == 64


def test_tokens_prove_the_admin_or_exactly_one_trial() -> None:
    key = "k" * 64
    token = trial_token(key, 3, 1)
    assert authenticate("Bearer admin", "admin", key) == ADMIN
    assert authenticate(f"Bearer {token}", "admin", key) == Principal(3, 1)
    # Another key, trial, experiment or a bit flipped: not a token.
    assert authenticate(f"Bearer {trial_token('x' * 64, 3, 1)}", "admin", key) is None
    assert authenticate(f"Bearer {token.replace('trial.3.', 'trial.4.')}", "admin", key) is None
    assert authenticate(f"Bearer {token.replace('.1.', '.2.')}", "admin", key) is None
    flipped = token[:-1] + ("1" if token.endswith("0") else "0")
    assert authenticate(f"Bearer {flipped}", "admin", key) is None
    # No key configured: trial tokens are refused; junk headers are refused without an error.
    assert authenticate(f"Bearer {token}", "admin", None) is None
    for header in (None, "", "admin", "Bearer", "Bearer ", "Basic admin", "Bearer é"):
        assert authenticate(header, "admin", key) is None


def test_a_trial_client_takes_only_the_address_from_the_master_file(
    server_url: str,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
) -> None:
    master_file = tmp_path / "master.json"
    master_file.write_text(json.dumps({"url": server_url, "token": "admin-token"}))
    client = MasterClient(
        closed_port_url(), "secret", master_file=str(master_file), token_from_file=False
    )
    try:
        assert client.request("GET", "/api/v1/echo", retry_for=5.0) == {"path": "/api/v1/echo"}
        assert (client.url, client.token) == (server_url, "secret")
    finally:
        client.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_a_home_another_user_owns_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "theirs"
    home.mkdir()
    nobody = pwd.getpwnam("nobody")
    os.chown(home, nobody.pw_uid, nobody.pw_gid)
    monkeypatch.setenv("TRIALKIT_HOME", str(home))
    with pytest.raises(HomeError, match=r"TRIALKIT_HOME: .*theirs belongs to uid \d+, not to you"):
        trialkit_home()
