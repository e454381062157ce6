"""The s3, gcs and azure backends: how each builds its fsspec filesystem from the
checkpoint_storage config, and how its errors are told apart (transient, denied, no bucket)."""

from __future__ import annotations

import importlib
import os
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._base import CheckpointStorageError

if TYPE_CHECKING:
    from ..config import AzureStorage, GCSStorage, S3Storage


class StorageExtraMissing(CheckpointStorageError):
    """The fsspec package of a storage type is not installed."""

    __module__ = "trialkit.storage"


@dataclass(frozen=True)
class Backend:
    """One object store: its URL scheme, where checkpoints go, and how to reach it."""

    scheme: str  # s3, gs, az
    container_word: str  # "bucket" or "container"
    container_field: str  # the config key naming it
    container: str
    prefix: str
    package: str  # the fsspec implementation, e.g. s3fs
    extra: str  # the trialkit extra that installs it
    permissions: Mapping[str, str]  # read/write/list/delete -> what the credentials need
    make: Callable[[Any], Any]  # the imported package -> a filesystem
    put_kwargs: Mapping[str, Any]

    @property
    def root(self) -> str:
        """``container[/prefix]`` as the filesystem names it."""
        return "/".join(p for p in (self.container, self.prefix.strip("/")) if p)

    @property
    def location(self) -> str:
        return f"{self.scheme}://{self.root}"

    def filesystem(self) -> Any:
        """A new filesystem (the package imported only now: it is an optional extra)."""
        try:
            module = importlib.import_module(self.package)
        except ImportError as e:
            raise StorageExtraMissing(self.missing_extra()) from e
        return self.make(module)

    def missing_extra(self) -> str:
        return (
            f"checkpoint_storage {self.location} needs the {self.package} package: "
            f"pip install 'trialkit[{self.extra}]'"
        )


#: Chunk size of multipart uploads: a file is read this much at a time, never whole.
PART_SIZE = 8 * 2**20
PART_CONCURRENCY = 4
#: No cached listings: a checkpoint another process just wrote must be seen at once.
_NO_LISTING_CACHE = {"use_listings_cache": False, "skip_instance_cache": True}


def s3_backend(config: S3Storage) -> Backend:
    """s3fs with the given keys and endpoint, else boto's usual credential chain."""

    def make(s3fs: Any) -> Any:
        return s3fs.S3FileSystem(
            key=config.access_key,
            secret=config.secret_key,
            endpoint_url=config.endpoint_url,
            max_concurrency=PART_CONCURRENCY,
            default_block_size=PART_SIZE,  # downloads' part size too
            **_NO_LISTING_CACHE,
        )

    return Backend(
        scheme="s3",
        container_word="bucket",
        container_field="bucket",
        container=config.bucket,
        prefix=config.prefix or "",
        package="s3fs",
        extra="s3",
        permissions={
            "read": "s3:GetObject",
            "write": "s3:PutObject",
            "list": "s3:ListBucket",
            "delete": "s3:DeleteObject",
        },
        make=make,
        put_kwargs={"chunksize": PART_SIZE, "max_concurrency": PART_CONCURRENCY},
    )


def gcs_backend(config: GCSStorage) -> Backend:
    """gcsfs's JSON-API filesystem with Google's default credentials (STORAGE_EMULATOR_HOST
    selects an emulator, which takes none). Not gcsfs's default class, whose gRPC bucket-type
    lookups (for zonal buckets) hang against an emulator."""

    def make(gcsfs: Any) -> Any:
        emulator = os.environ.get("STORAGE_EMULATOR_HOST", "") not in ("", "default")
        return gcsfs.core.GCSFileSystem(token="anon" if emulator else None, **_NO_LISTING_CACHE)

    return Backend(
        scheme="gs",
        container_word="bucket",
        container_field="bucket",
        container=config.bucket,
        prefix=config.prefix or "",
        package="gcsfs",
        extra="gcs",
        permissions={
            "read": "storage.objects.get",
            "write": "storage.objects.create",
            "list": "storage.objects.list",
            "delete": "storage.objects.delete",
        },
        make=make,
        put_kwargs={"chunksize": PART_SIZE},
    )


def azure_backend(config: AzureStorage) -> Backend:
    """adlfs from a connection string, or an account URL with a credential (an account key
    or SAS token; none: Azure's default credential chain)."""

    def make(adlfs: Any) -> Any:
        if config.connection_string:
            return adlfs.AzureBlobFileSystem(
                connection_string=config.connection_string, **_NO_LISTING_CACHE
            )
        url = urllib.parse.urlparse(str(config.account_url))
        host = url.netloc or url.path
        return adlfs.AzureBlobFileSystem(
            account_name=host.split(".")[0],
            account_host=host,
            credential=config.credential,
            anon=False,
            **_NO_LISTING_CACHE,
        )

    role = "the Storage Blob Data {} role on the container"
    return Backend(
        scheme="az",
        container_word="container",
        container_field="container",
        container=config.container,
        prefix="",
        package="adlfs",
        extra="azure",
        permissions={
            "read": role.format("Reader"),
            "write": role.format("Contributor"),
            "list": role.format("Reader"),
            "delete": role.format("Contributor"),
        },
        make=make,
        put_kwargs={"max_concurrency": PART_CONCURRENCY},
    )


BACKENDS: dict[str, Callable[[Any], Backend]] = {
    "s3": s3_backend,
    "gcs": gcs_backend,
    "azure": azure_backend,
}

# What the error of one request says about the store: worth retrying, or a permanent refusal.
_TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}
_TRANSIENT_CODES = (
    "SlowDown",
    "Throttl",
    "RequestTimeout",
    "ServiceUnavailable",
    "InternalError",
    "ServerBusy",
    "OperationTimedOut",
    "TooManyRequests",
)
_TRANSIENT_TYPES = {
    "EndpointConnectionError",
    "ConnectionClosedError",
    "ReadTimeoutError",
    "ConnectTimeoutError",
    "ClientConnectionError",
    "ClientConnectorError",
    "ServerDisconnectedError",
    "ClientPayloadError",
    "ClientOSError",
    "ServiceRequestError",
    "ServiceResponseError",
    "IncompleteRead",
    "FSTimeoutError",
}
_DENIED_CODES = ("AccessDenied", "AuthorizationFailure", "AuthorizationPermissionMismatch")
_BAD_CREDENTIALS = (
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AuthenticationFailed",
    "NoCredentialsError",
    "InvalidAuthenticationInfo",
    "PartialCredentialsError",
    "DefaultCredentialsError",
)
_NO_CONTAINER = ("NoSuchBucket", "ContainerNotFound", "BucketNotFound")


def _chain(e: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[BaseException | None] = [e]
    while todo:
        cur = todo.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        yield cur
        todo += [cur.__cause__, cur.__context__]


def _status(e: BaseException) -> int | None:
    for attr in ("status_code", "status", "code"):
        value = getattr(e, attr, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
    response = getattr(e, "response", None)
    if isinstance(response, dict):
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return int(status) if isinstance(status, int) else None
    return None


def _text(e: BaseException) -> str:
    names = " ".join(t.__name__ for t in type(e).__mro__)
    return f"{names} {getattr(e, 'error_code', '') or ''} {e}"


def kind_of(e: BaseException) -> str:
    """``transient`` (retry), ``credentials``, ``denied``, ``no-container``, ``missing``
    (no such object) or ``other``."""
    chain = list(_chain(e))
    texts = [_text(x) for x in chain]
    if any(c in t for t in texts for c in _BAD_CREDENTIALS) or any(
        _status(x) == 401 for x in chain
    ):
        return "credentials"
    if any(c in t for t in texts for c in _NO_CONTAINER):
        return "no-container"
    if any(isinstance(x, PermissionError) or _status(x) == 403 for x in chain) or any(
        c in t for t in texts for c in _DENIED_CODES
    ):
        return "denied"
    for x in chain:
        if _status(x) in _TRANSIENT_STATUS or isinstance(x, ConnectionError | TimeoutError):
            return "transient"
        if {t.__name__ for t in type(x).__mro__} & _TRANSIENT_TYPES:
            return "transient"
    if any(c in t for t in texts for c in _TRANSIENT_CODES):
        return "transient"
    if any(isinstance(x, FileNotFoundError) or _status(x) == 404 for x in chain):
        return "missing"
    return "other"


def first_line(e: BaseException) -> str:
    """The error's first line, for a message of one line."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__
