"""Build a storage manager from the typed checkpoint_storage config (or, at the user-facing
edges such as ``core.init(checkpoint_storage=...)``, a config dict or a string shortcut)."""

from __future__ import annotations

import importlib.util
import os
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._base import StorageManager
from ._cloud import BACKENDS
from ._object_store import ObjectStoreManager
from ._shared_fs import SharedFSStorageManager

if TYPE_CHECKING:  # the config models (pydantic) load only when a dict is read
    from ..config import CheckpointStorage

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
    return _shared_fs_dir(
        str(config["host_path"]), config.get("storage_path") or config.get("checkpoint_path")
    )


def _shared_fs_dir(host_path: str, sub: str | None) -> Path:
    host = Path(os.path.expanduser(host_path)).absolute()
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


def storage_model(config: Mapping[str, Any] | str) -> CheckpointStorage:
    """The typed storage config of a dict or string shortcut, as leniently as ``build`` has
    always read dicts (keys no storage type has are ignored); StorageConfigError names a
    missing type or required field."""
    if isinstance(config, str):
        config = from_string(config)
    kind = config.get("type")
    if kind is None:
        raise StorageConfigError(
            "checkpoint_storage.type: missing; use shared_fs, directory, s3, gcs or azure"
        )
    from .. import config as models

    kinds: dict[str, type[CheckpointStorage]] = {
        "shared_fs": models.SharedFSStorage,
        "directory": models.DirectoryStorage,
        "s3": models.S3Storage,
        "gcs": models.GCSStorage,
        "azure": models.AzureStorage,
    }
    model = kinds.get(str(kind))
    if model is None:
        raise StorageConfigError(
            f"checkpoint_storage.type: unknown type {kind!r}; expected shared_fs, directory, "
            "s3, gcs or azure"
        )
    _check_required(str(kind), config)
    fields = {k: config[k] for k in model.model_fields if config.get(k) is not None}
    if kind == "shared_fs" and not fields.get("storage_path") and config.get("checkpoint_path"):
        fields["storage_path"] = config["checkpoint_path"]  # the legacy name
    return model.model_construct(**fields)


def _check_required(kind: str, config: Mapping[str, Any]) -> None:
    for required in _REQUIRED[kind]:
        if not config.get(required):
            raise StorageConfigError(f"checkpoint_storage.{required}: required for type {kind}")


def _host_directory(kind: str, root: str, sub: str | None) -> StorageManager:
    """shared_fs (``host_path`` + ``storage_path``) or directory (``container_path``)."""
    if kind == "directory":
        return SharedFSStorageManager(Path(root).expanduser())
    return SharedFSStorageManager(_shared_fs_dir(root, sub))


def build(config: CheckpointStorage | Mapping[str, Any] | str) -> StorageManager:
    """The storage manager for a typed checkpoint_storage config (or a dict or string
    shortcut, read by ``storage_model``). Nothing is contacted here (``check_access`` does
    that); an object store's package missing is a StorageConfigError naming the extra."""
    if isinstance(config, Mapping) and config.get("type") in ("shared_fs", "directory"):
        # Every trial builds its storage from the config dict it starts with: reading the two
        # host-directory types here keeps the config models (pydantic) out of a trial's start
        # (+100 ms a trial: bench/create_to_first_metric.py).
        kind = str(config["type"])
        _check_required(kind, config)
        root = str(config["host_path" if kind == "shared_fs" else "container_path"])
        return _host_directory(
            kind, root, config.get("storage_path") or config.get("checkpoint_path")
        )
    storage = storage_model(config) if isinstance(config, (str, Mapping)) else config
    if storage.type == "shared_fs":
        return _host_directory("shared_fs", storage.host_path, storage.storage_path)
    if storage.type == "directory":
        return _host_directory("directory", storage.container_path, None)
    if storage.type == "azure" and not (storage.connection_string or storage.account_url):
        raise StorageConfigError(
            "checkpoint_storage: type azure needs connection_string or account_url"
        )
    backend = BACKENDS[storage.type](storage)
    if not _installed(backend.package):
        raise StorageConfigError(backend.missing_extra())
    return ObjectStoreManager(backend)
