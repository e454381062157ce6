"""Checkpoint storage credentials are stored apart from the experiment config and the checkpoint
records (which are shown by describe, REST and the web UI): masked there, kept in
``storage_secrets``, given back only by ``config_with_secrets`` / ``checkpoint_storage_with_secrets``,
and deleted with their experiment (docs/security.md "Storage credentials")."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import create_engine, text

from trialkit.store import Store, Trial

MASK = "********"
S3 = {
    "type": "s3",
    "bucket": "ckpts",
    "access_key": "AKIA-TEST-ACCESS-KEY",
    "secret_key": "s3-secret-value-1234",
    "endpoint_url": "http://127.0.0.1:9",
}
AZURE_STRING = {
    "type": "azure",
    "container": "ckpts",
    "connection_string": "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=azure-key-5678",
}
AZURE_URL = {
    "type": "azure",
    "container": "ckpts",
    "account_url": "https://a.blob.core.windows.net",
    "credential": "sas-token-9012",
}
SECRETS = (
    "AKIA-TEST-ACCESS-KEY",
    "s3-secret-value-1234",
    "azure-key-5678",
    "sas-token-9012",
    "other-secret-3456",
)


def _table_text(store: Store, sql: str) -> str:
    """What a table holds, as text, read with plain SQL (not through the store)."""
    engine = create_engine(store.url)
    try:
        with engine.connect() as conn:
            return repr(conn.execute(text(sql)).fetchall())
    finally:
        engine.dispose()


def _shown_text(store: Store) -> str:
    """Everything of experiments and checkpoints that describe and REST read."""
    return _table_text(store, "SELECT * FROM experiments") + _table_text(
        store, "SELECT * FROM checkpoints"
    )


def _experiment(store: Store, storage: dict[str, Any]) -> Trial:
    config = {"name": "e", "searcher": {"name": "single"}, "checkpoint_storage": storage}
    exp = store.create_experiment(name="e", config=config)
    return store.create_trial(experiment_id=exp.id, request_id="r", hparams={}, seed=1)


def _checkpoint(store: Store, trial: Trial, uuid: str, storage: dict[str, Any]) -> None:
    store.add_checkpoint(
        uuid=uuid,
        trial_id=trial.id,
        experiment_id=trial.experiment_id,
        run_id=0,
        steps_completed=1,
        metadata={},
        resources={},
        storage=storage,
    )


@pytest.mark.parametrize("storage", [S3, AZURE_STRING, AZURE_URL], ids=lambda s: str(s["type"]))
def test_stored_config_holds_no_secret_and_the_secrets_table_does(
    store: Store, storage: dict[str, Any]
) -> None:
    trial = _experiment(store, storage)
    secret_fields = {
        k for k in ("access_key", "secret_key", "connection_string", "credential") if k in storage
    }
    shown = store.get_experiment(trial.experiment_id).config["checkpoint_storage"]
    assert {k: v for k, v in shown.items() if k in secret_fields} == dict.fromkeys(
        secret_fields, MASK
    )
    assert {k: v for k, v in shown.items() if k not in secret_fields} == {
        k: v for k, v in storage.items() if k not in secret_fields
    }
    assert not [s for s in SECRETS if s in _shown_text(store)]
    kept = _table_text(store, "SELECT secrets FROM storage_secrets")
    assert all(storage[k] in kept for k in secret_fields)
    assert store.config_with_secrets(trial.experiment_id)["checkpoint_storage"] == storage


def test_checkpoint_records_are_masked_and_keep_their_own_credentials(store: Store) -> None:
    trial = _experiment(store, S3)
    _checkpoint(store, trial, "same-keys", S3)
    other = {**S3, "secret_key": "other-secret-3456"}
    _checkpoint(store, trial, "other-keys", other)
    assert store.get_checkpoint("same-keys").storage["secret_key"] == MASK
    assert store.get_checkpoint("other-keys").storage["secret_key"] == MASK
    assert not [s for s in SECRETS if s in _shown_text(store)]
    assert store.checkpoint_storage_with_secrets("same-keys") == S3
    assert store.checkpoint_storage_with_secrets("other-keys") == other


def test_a_config_without_credentials_is_stored_as_given(store: Store) -> None:
    storage = {"type": "s3", "bucket": "ckpts"}  # the environment's credential chain
    trial = _experiment(store, storage)
    assert store.get_experiment(trial.experiment_id).config["checkpoint_storage"] == storage
    assert _table_text(store, "SELECT * FROM storage_secrets") == "[]"


def test_deleting_an_experiment_deletes_its_secrets(store: Store) -> None:
    kept = _experiment(store, AZURE_URL)
    doomed = _experiment(store, S3)
    _checkpoint(store, doomed, "other-keys", {**S3, "secret_key": "other-secret-3456"})
    store.delete_experiment_rows(doomed.experiment_id)
    left = _table_text(store, "SELECT experiment_id, secrets FROM storage_secrets")
    assert "s3-secret-value-1234" not in left and "other-secret-3456" not in left
    assert "sas-token-9012" in left
    assert store.config_with_secrets(kept.experiment_id)["checkpoint_storage"] == AZURE_URL


def test_a_config_written_back_masked_keeps_its_credentials(store: Store) -> None:
    trial = _experiment(store, S3)
    shown = store.get_experiment(trial.experiment_id).config  # masked
    store.update_experiment(trial.experiment_id, config={**shown, "description": "edited"})
    assert store.config_with_secrets(trial.experiment_id)["checkpoint_storage"] == S3
    new_key = {**shown["checkpoint_storage"], "secret_key": "other-secret-3456"}
    store.update_experiment(trial.experiment_id, config={**shown, "checkpoint_storage": new_key})
    revealed = store.config_with_secrets(trial.experiment_id)["checkpoint_storage"]
    assert revealed == {**S3, "secret_key": "other-secret-3456"}
    assert not [s for s in SECRETS if s in _shown_text(store)]
    env_chain = {"type": "s3", "bucket": "ckpts"}  # credentials dropped: none kept
    store.update_experiment(trial.experiment_id, config={**shown, "checkpoint_storage": env_chain})
    assert _table_text(store, "SELECT * FROM storage_secrets") == "[]"
