"""A ``checkpoint_storage`` block without ``type`` (Determined fills it from the cluster's
default): the master completes it from its default storage and says so (issue 32, 14a)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.inprocess_master import MODEL_DEF, SINGLE, TOKEN, inprocess_master, served
from trialkit.cli import _common, cli
from trialkit.client import MasterClient
from trialkit.config import ConfigError, parse_config


def test_the_master_completes_a_block_without_type_and_describe_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "master"
    config = {**SINGLE, "checkpoint_storage": {"save_trial_best": 3, "save_trial_latest": 0}}
    with inprocess_master(home) as m:
        resp = m.call("POST", "/api/v1/experiments", {"config": config, "model_def": MODEL_DEF})
        assert resp.status_code == 200, resp.text
        [note] = [w for w in resp.json()["warnings"] if w.startswith("checkpoint_storage")]
        assert "completed from the master's default storage" in note
        storage = resp.json()["experiment"]["config"]["checkpoint_storage"]
        assert storage["type"] == "shared_fs"
        assert storage["host_path"] == str(home / "checkpoints")
        assert (storage["save_trial_best"], storage["save_trial_latest"]) == (3, 0)
        assert storage["filled_from_default"] == [
            "host_path", "save_experiment_best", "type"
        ]  # fmt: skip
        with served(m.app) as url:
            monkeypatch.setattr(_common, "get_client", lambda start=True: MasterClient(url, TOKEN))
            out = CliRunner().invoke(cli, ["e", "describe", "1"])
        assert out.exit_code == 0, out.output
        assert (
            f"checkpoint storage shared_fs {home / 'checkpoints'}: host_path, "
            "save_experiment_best, type from the master's default"
        ) in out.output


def test_a_key_of_another_type_than_the_default_is_one_line(tmp_path: Path) -> None:
    config = {**SINGLE, "checkpoint_storage": {"bucket": "b"}}
    with inprocess_master(tmp_path / "master") as m:
        resp = m.call("POST", "/api/v1/experiments", {"config": config, "model_def": MODEL_DEF})
    assert resp.status_code == 400
    assert "checkpoint_storage.bucket: not a key of the master's default storage (shared_fs)" in (
        resp.text
    )


def test_a_key_no_storage_type_has_is_one_line() -> None:
    raw = {"searcher": {"name": "single"}, "checkpoint_storage": {"bucket_name": "b"}}
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    assert [str(e) for e in info.value.errors] == [
        "checkpoint_storage.bucket_name: unknown key; did you mean bucket?"
    ]


@pytest.mark.parametrize("value", [{"nested": 1}, [1, 2]])
def test_a_value_no_storage_field_takes_is_one_line(value: object) -> None:
    """The block travels unvalidated until the master completes it, so a value no field could
    take (found by tests/faults/test_fuzz_config.py: a nested list stayed in the trial's config)
    is refused at once."""
    raw = {"searcher": {"name": "single"}, "checkpoint_storage": {"access_key": value}}
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    [error] = [str(e) for e in info.value.errors]
    assert error.startswith("checkpoint_storage.access_key: expected a string, number or boolean")
