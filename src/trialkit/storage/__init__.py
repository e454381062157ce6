"""Checkpoint storage managers (shared_fs and directory; s3/gcs/azure are parsed)."""

from ._base import (
    CheckpointContentError,
    CheckpointNotFound,
    CheckpointStorageError,
    Selector,
    StorageManager,
    check_storage_id,
    list_directory,
)
from ._build import StorageConfigError, build, from_string, shared_fs_path
from ._shared_fs import SharedFSStorageManager

__all__ = [
    "CheckpointContentError",
    "CheckpointNotFound",
    "CheckpointStorageError",
    "Selector",
    "SharedFSStorageManager",
    "StorageConfigError",
    "StorageManager",
    "build",
    "check_storage_id",
    "from_string",
    "list_directory",
    "shared_fs_path",
]
