"""Checkpoint storage managers (shared_fs and directory; s3/gcs/azure are parsed)."""

from ._base import (
    CheckpointNotFound,
    CheckpointStorageError,
    Selector,
    StorageManager,
    list_directory,
)
from ._build import StorageConfigError, build, from_string, shared_fs_path
from ._shared_fs import SharedFSStorageManager

__all__ = [
    "CheckpointNotFound",
    "CheckpointStorageError",
    "Selector",
    "SharedFSStorageManager",
    "StorageConfigError",
    "StorageManager",
    "build",
    "from_string",
    "list_directory",
    "shared_fs_path",
]
