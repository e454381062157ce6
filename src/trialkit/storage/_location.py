"""Where a ``checkpoint_storage`` block puts checkpoints, so that two blocks can be compared:
the master registers a trial's checkpoint only where its experiment's storage is."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._build import shared_fs_path


def _azure_account(config: Mapping[str, Any]) -> str:
    """The account of an azure block: the connection string's AccountName (or BlobEndpoint),
    else the account URL's host. Never a credential."""
    connection = str(config.get("connection_string") or "")
    if connection:
        fields = dict(part.split("=", 1) for part in connection.split(";") if "=" in part)
        return fields.get("AccountName") or fields.get("BlobEndpoint", "")
    url = urllib.parse.urlparse(str(config.get("account_url") or ""))
    return url.netloc or url.path


def location(config: Mapping[str, Any]) -> dict[str, str]:
    """The fields that say where ``config`` puts checkpoints, normalized (a shared_fs path
    resolved with its storage_path); credentials and GC settings are not among them."""
    kind = str(config.get("type"))
    if kind == "shared_fs":
        return {"type": kind, "host_path": str(shared_fs_path(config))}
    if kind == "directory":
        return {
            "type": kind,
            "container_path": str(Path(str(config["container_path"])).expanduser()),
        }
    if kind == "azure":
        return {
            "type": kind,
            "container": str(config["container"]),
            "account": _azure_account(config),
        }
    return {
        "type": kind,
        "bucket": str(config.get("bucket") or ""),
        "prefix": str(config.get("prefix") or "").strip("/"),
        "endpoint_url": str(config.get("endpoint_url") or ""),
    }


def location_mismatch(given: Mapping[str, Any], configured: Mapping[str, Any]) -> str | None:
    """None when ``given`` puts checkpoints where ``configured`` does, else which field
    differs, both values named (``host_path '/' is not '/data/ckpts'``)."""
    mine, theirs = location(given), location(configured)
    for field in theirs if mine["type"] == theirs["type"] else ("type",):
        if mine.get(field) != theirs[field]:
            return f"{field} {mine.get(field)!r} is not {theirs[field]!r}"
    return None
