"""Credentials in a ``checkpoint_storage`` block: which fields they are, the mask shown in their
place, and how a config or a checkpoint's storage is split into what may be shown and what not.

The master's store keeps the stored config masked and the values apart (docs/security.md); the
master and the trial get them back with ``reveal_*``; a client never sees them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: What a credential reads as wherever a config or a checkpoint record is shown or stored.
MASK = "********"
#: The ``checkpoint_storage`` fields that hold credentials (s3 keys, an Azure connection string,
#: which holds the account key, and an Azure account key or SAS token).
SECRET_FIELDS = ("access_key", "secret_key", "connection_string", "credential")

Secrets = dict[str, str]


def split_storage(storage: Mapping[str, Any]) -> tuple[dict[str, Any], Secrets]:
    """The storage block with its credentials masked, and the credentials by field."""
    masked, secrets = dict(storage), {}
    for field in SECRET_FIELDS:
        value = storage.get(field)
        if isinstance(value, str) and value and value != MASK:
            secrets[field] = value
            masked[field] = MASK
    return masked, secrets


def reveal_storage(storage: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
    """The storage block with each masked field given its value back from ``secrets``."""
    out = dict(storage)
    for field, value in secrets.items():
        if out.get(field) == MASK:
            out[field] = value
    return out


def split_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], Secrets]:
    """An experiment config with its checkpoint storage's credentials masked, and those."""
    storage = config.get("checkpoint_storage")
    if not isinstance(storage, Mapping):
        return dict(config), {}
    masked, secrets = split_storage(storage)
    return {**config, "checkpoint_storage": masked}, secrets


def reveal_config(config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
    """An experiment config (as stored: masked) with its credentials back."""
    storage = config.get("checkpoint_storage")
    if not secrets or not isinstance(storage, Mapping):
        return dict(config)
    return {**config, "checkpoint_storage": reveal_storage(storage, secrets)}


def kept_secrets(
    config: Mapping[str, Any], given: Mapping[str, str], old: Mapping[str, str]
) -> Secrets:
    """The credentials of a masked ``config`` that replaces one holding ``old``: each masked
    field keeps the value given with it, else its old one (a config read back masked and
    written again keeps its credentials)."""
    storage = config.get("checkpoint_storage")
    if not isinstance(storage, Mapping):
        return {}
    merged = {**old, **given}
    return {k: v for k, v in merged.items() if storage.get(k) == MASK}


def without_masked(storage: Mapping[str, Any]) -> dict[str, Any]:
    """The storage block without its masked fields: what a client that was served a masked
    config can build, reaching the storage with its own credential chain (env, files, roles)."""
    return {k: v for k, v in storage.items() if not (k in SECRET_FIELDS and v == MASK)}


def is_masked(storage: Mapping[str, Any]) -> bool:
    """Whether the block had credentials that were masked."""
    return any(storage.get(field) == MASK for field in SECRET_FIELDS)
