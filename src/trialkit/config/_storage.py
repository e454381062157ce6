"""``checkpoint_storage``: one model per storage ``type``, each with the GC policy keys."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from trialkit.config._base import ConfigModel
from trialkit.config._errors import ConfigError, Issue, custom_error, show, unknown_key_message

STORAGE_TYPES = ("shared_fs", "directory", "s3", "gcs", "azure")


class _StorageBase(ConfigModel):
    """Checkpoint GC policy shared by every storage type (applied when the experiment ends)."""

    save_experiment_best: int = Field(default=0, ge=0)
    save_trial_best: int = Field(default=1, ge=0)
    save_trial_latest: int = Field(default=1, ge=0)
    #: Set by the master: the keys it took from its default storage for a block without
    #: ``type`` (Determined's merge of the cluster default); shown by ``experiment describe``.
    filled_from_default: list[str] = []

    @model_serializer(mode="wrap")
    def _omit_unfilled(self, handler: Any) -> dict[str, Any]:
        """``filled_from_default`` appears only when the master filled something."""
        full: dict[str, Any] = handler(self)
        if not full.get("filled_from_default"):
            full.pop("filled_from_default", None)
        return full


class SharedFSStorage(_StorageBase):
    """A host directory; ``checkpoint_path`` (legacy) is read as ``storage_path``.

    A relative ``host_path`` is relative to the master's home (``$TRIALKIT_HOME``, e.g.
    ``host_path: ckpts`` means ``$TRIALKIT_HOME/ckpts``), fixed when the experiment is created,
    so every run of every trial uses the same directory; in a local run without a master it is
    relative to the current directory."""

    type: Literal["shared_fs"]
    host_path: str
    storage_path: str | None = None
    propagation: str = "rprivate"
    container_path: str | None = None
    tensorboard_path: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _fold_checkpoint_path(cls, data: Any) -> Any:
        """Legacy ``checkpoint_path`` is the old name of ``storage_path``."""
        if not isinstance(data, dict) or data.get("checkpoint_path") is None:
            return data
        data = dict(data)
        legacy = data.pop("checkpoint_path")
        if data.get("storage_path") not in (None, legacy):
            raise custom_error(
                "checkpoint_path is the legacy name of storage_path and they differ; "
                "keep only storage_path"
            )
        data["storage_path"] = legacy
        return data


class DirectoryStorage(_StorageBase):
    """A directory on the machine that runs the trials; a relative ``container_path`` is
    relative to the master's home, as for shared_fs's ``host_path``."""

    type: Literal["directory"]
    container_path: str


def _check_prefix(prefix: str | None) -> str | None:
    if prefix is not None and ".." in prefix.split("/"):
        raise custom_error(f"must not contain '..', got {prefix!r}; use a plain prefix")
    return prefix


class S3Storage(_StorageBase):
    """An S3 (or S3-compatible, via ``endpoint_url``) bucket."""

    type: Literal["s3"]
    bucket: str
    access_key: str | None = None
    secret_key: str | None = None
    endpoint_url: str | None = None
    prefix: str | None = None

    @field_validator("prefix")
    @classmethod
    def _no_parent_dirs(cls, prefix: str | None) -> str | None:
        return _check_prefix(prefix)


class GCSStorage(_StorageBase):
    """A Google Cloud Storage bucket."""

    type: Literal["gcs"]
    bucket: str
    prefix: str | None = None

    @field_validator("prefix")
    @classmethod
    def _no_parent_dirs(cls, prefix: str | None) -> str | None:
        return _check_prefix(prefix)


class AzureStorage(_StorageBase):
    """An Azure Blob container: exactly one of connection_string / account_url."""

    type: Literal["azure"]
    container: str
    connection_string: str | None = None
    account_url: str | None = None
    credential: str | None = None

    @model_validator(mode="after")
    def _check_auth(self) -> AzureStorage:
        if (self.connection_string is None) == (self.account_url is None):
            raise custom_error("give exactly one of connection_string or account_url")
        if self.connection_string is not None and self.credential is not None:
            raise custom_error("credential goes with account_url, not connection_string; drop one")
        return self


CheckpointStorage = Annotated[
    SharedFSStorage | DirectoryStorage | S3Storage | GCSStorage | AzureStorage,
    Field(discriminator="type"),
]


_STORAGE_MODELS: tuple[type[_StorageBase], ...] = (
    SharedFSStorage,
    DirectoryStorage,
    S3Storage,
    GCSStorage,
    AzureStorage,
)
#: Every key some storage type accepts (``checkpoint_path``: shared_fs's legacy name).
_ANY_STORAGE_KEY = sorted(
    {k for m in _STORAGE_MODELS for k in m.model_fields if k != "filled_from_default"}
    | {"checkpoint_path"}
)


def _is_setting(value: Any) -> bool:
    """A value some storage field could take: every field is a string, number or boolean."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (str, int, bool))


def partial_storage_issues(block: dict[str, Any]) -> list[Issue]:
    """Keys of a ``checkpoint_storage`` block without ``type`` that no storage type has, and
    values no storage field takes (the rest is checked once the master's default completes
    it; until then the block travels as given, so it must already be plain settings)."""
    issues = [
        Issue(("checkpoint_storage", key), unknown_key_message(key, _ANY_STORAGE_KEY))
        for key in block
        if key not in _ANY_STORAGE_KEY
    ]
    issues += [
        Issue(
            ("checkpoint_storage", key),
            f"expected a string, number or boolean, got {show(value)}",
        )
        for key, value in block.items()
        if key in _ANY_STORAGE_KEY and value is not None and not _is_setting(value)
    ]
    return issues


def complete_storage(
    partial: dict[str, Any], default: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """A block without ``type`` completed from the master's ``default`` storage (its keys win
    over the default's), and the note saying what was taken."""
    kind = default.get("type")
    model = dict(zip(STORAGE_TYPES, _STORAGE_MODELS, strict=True)).get(str(kind))
    own = {*model.model_fields, "checkpoint_path"} if model is not None else set(partial)
    foreign = [k for k in partial if k not in own]
    if foreign:
        raise ConfigError(
            [
                f"checkpoint_storage.{foreign[0]}: not a key of the master's default storage "
                f"({kind}) that completes this block without type; add the type it belongs to"
            ]
        )
    taken = sorted(k for k, v in default.items() if k not in partial and v is not None)
    place = default.get("host_path") or default.get("container_path") or default.get("bucket")
    note = (
        "checkpoint_storage: no type given; completed from the master's default storage "
        f"({default.get('type')} {place}): {', '.join(taken)}"
    )
    return {**default, **partial, "filled_from_default": taken}, note
