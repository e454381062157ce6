"""Checkpoint storage managers: shared_fs and directory, and s3, gcs and azure through fsspec."""

from ._base import (
    PARTIALS,
    CheckpointContentError,
    CheckpointNotFound,
    CheckpointStorageError,
    Selector,
    StorageManager,
    check_storage_id,
    list_directory,
    tensorboard_prefix,
)
from ._build import StorageConfigError, build, from_string, shared_fs_path, storage_model
from ._cloud import StorageExtraMissing
from ._location import location_mismatch
from ._manifest import MANIFEST_NAME, CheckpointIntegrityError
from ._object_store import ObjectStoreManager
from ._shared_fs import SharedFSStorageManager

__all__ = [
    "MANIFEST_NAME",
    "PARTIALS",
    "CheckpointContentError",
    "CheckpointIntegrityError",
    "CheckpointNotFound",
    "CheckpointStorageError",
    "Selector",
    "ObjectStoreManager",
    "SharedFSStorageManager",
    "StorageConfigError",
    "StorageExtraMissing",
    "StorageManager",
    "build",
    "check_storage_id",
    "tensorboard_prefix",
    "from_string",
    "list_directory",
    "location_mismatch",
    "shared_fs_path",
    "storage_model",
]
