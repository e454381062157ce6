"""Build a storage manager from a checkpoint_storage config dict or a string shortcut."""

from __future__ import annotations

import importlib.util
import os
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._base import StorageManager
from ._cloud import BACKENDS
from ._object_store import ObjectStoreManager
from ._shared_fs import SharedFSStorageManager

_REQUIRED = {
    "shared_fs": ("host_path",),
    "directory": ("container_path",),
    "s3": ("bucket",),
    "gcs": ("bucket",),
    "azure": ("container",),
}


class StorageConfigError(ValueError):
    """A checkpoint_storage setting that cannot be used."""


def from_string(shortcut: str) -> dict[str, Any]:
    """``/path``, ``file:///path``, a relative path, ``s3://bucket/prefix``, ``gs://bucket/prefix``."""
    if shortcut == "":
        raise StorageConfigError("checkpoint_storage: base_path must not be an empty string")
    url = urllib.parse.urlparse(shortcut)
    if url.params or url.query or url.fragment:
        raise StorageConfigError(
            f"checkpoint_storage: {shortcut!r} has URL parameters, a query or a fragment"
        )
    if url.scheme in ("", "file"):
        if url.netloc:
            raise StorageConfigError(
                f"checkpoint_storage: {shortcut!r}: file:// URLs take no host (use file:///path)"
            )
        return {"type": "shared_fs", "host_path": str(Path(url.path).absolute())}
    if url.scheme == "s3":
        return {"type": "s3", "bucket": url.netloc, "prefix": url.path.lstrip("/") or None}
    if url.scheme == "gs":
        return {"type": "gcs", "bucket": url.netloc, "prefix": url.path.lstrip("/") or None}
    raise StorageConfigError(
        f"checkpoint_storage: {shortcut!r}: unsupported scheme {url.scheme!r}; "
        "use a path, file://, s3:// or gs://"
    )


def shared_fs_path(config: Mapping[str, Any]) -> Path:
    """Resolve ``host_path[/storage_path]`` (storage_path must stay inside host_path)."""
    host = Path(os.path.expanduser(str(config["host_path"]))).absolute()
    sub = config.get("storage_path") or config.get("checkpoint_path")
    if not sub:
        return host
    path = (host / sub).resolve()
    if host.resolve() not in (path, *path.parents):
        raise StorageConfigError(
            f"checkpoint_storage.storage_path: {sub!r} must stay inside host_path {str(host)!r}"
        )
    return path


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # e.g. blocked with sys.modules[package] = None
        return False


def build(config: Mapping[str, Any] | str) -> StorageManager:
    """The storage manager for a checkpoint_storage dict or string shortcut. Nothing is
    contacted here (``check_access`` does that); an object store's package missing is a
    StorageConfigError naming the extra to install."""
    if isinstance(config, str):
        config = from_string(config)
    kind = config.get("type")
    if kind is None:
        raise StorageConfigError(
            "checkpoint_storage.type: missing; use shared_fs, directory, s3, gcs or azure"
        )
    for required in _REQUIRED.get(str(kind), ()):
        if not config.get(required):
            raise StorageConfigError(f"checkpoint_storage.{required}: required for type {kind}")
    if kind == "shared_fs":
        return SharedFSStorageManager(shared_fs_path(config))
    if kind == "directory":
        return SharedFSStorageManager(Path(str(config["container_path"])).expanduser())
    if kind in BACKENDS:
        if kind == "azure" and not (config.get("connection_string") or config.get("account_url")):
            raise StorageConfigError(
                "checkpoint_storage: type azure needs connection_string or account_url"
            )
        backend = BACKENDS[str(kind)](config)
        if not _installed(backend.package):
            raise StorageConfigError(backend.missing_extra())
        return ObjectStoreManager(backend)
    raise StorageConfigError(
        f"checkpoint_storage.type: unknown type {kind!r}; expected shared_fs, directory, s3, "
        "gcs or azure"
    )
