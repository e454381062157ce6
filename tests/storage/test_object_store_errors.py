"""The object-store manager when the S3 server misbehaves (through a real proxy in front of moto
that fails requests on purpose), when a bucket or package is missing, and with big files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.storage.servers import FaultyProxy, Server, make_bucket, s3_config
from trialkit.storage import (
    PARTIALS,
    CheckpointStorageError,
    ObjectStoreManager,
    StorageConfigError,
    build,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bucket(s3: Server) -> dict[str, Any]:
    return make_bucket(s3)


@pytest.fixture
def proxy(s3: Server) -> Iterator[FaultyProxy]:
    p = FaultyProxy(upstream_port=s3.port)
    yield p
    p.close()


def via(proxy: FaultyProxy, bucket: dict[str, Any]) -> ObjectStoreManager:
    m = build({**bucket, "endpoint_url": proxy.url})
    assert isinstance(m, ObjectStoreManager)
    m.backoff = 0.05
    return m


def files(root: Path, n: int, size: int) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"f{i}.bin").write_bytes(os.urandom(size))
    return [f"f{i}.bin" for i in range(n)]


def test_transient_failures_are_retried(
    proxy: FaultyProxy, bucket: dict[str, Any], tmp_path: Path
) -> None:
    """12 answers of 503 SlowDown in a row (more than botocore's own 5 tries): the manager's
    backoff carries the upload and the download through."""
    m = via(proxy, bucket)
    proxy.fail_first = 12
    names = files(tmp_path / "src", 3, 1000)
    m.upload(tmp_path / "src", "ck", names)
    assert proxy.failed == 12
    proxy.failed, proxy.fail_first = 0, 12
    m.download("ck", tmp_path / "out")
    assert proxy.failed == 12
    for n in names:
        assert (tmp_path / "out" / n).read_bytes() == (tmp_path / "src" / n).read_bytes()


def test_a_store_that_keeps_failing_is_one_line(
    proxy: FaultyProxy, bucket: dict[str, Any], tmp_path: Path
) -> None:
    m = via(proxy, bucket)
    m.retries = 2
    proxy.fail_first = 10**6
    names = files(tmp_path / "src", 1, 10)
    with pytest.raises(CheckpointStorageError) as e:
        m.upload(tmp_path / "src", "ck", names)
    message = str(e.value)
    # The first object an upload writes is its partial marker (see remove_stale_partials).
    marker = f"s3://{bucket['bucket']}/ckpts/{PARTIALS}/ck"
    assert message.startswith(f"{marker}: write still failing"), message
    assert "after 2 tries" in message and "\n" not in message


def test_access_denied_names_the_permission(
    proxy: FaultyProxy, bucket: dict[str, Any], tmp_path: Path
) -> None:
    m = via(proxy, bucket)
    proxy.deny = frozenset({"PUT"})
    names = files(tmp_path / "src", 1, 10)
    with pytest.raises(CheckpointStorageError) as e:
        m.upload(tmp_path / "src", "ck", names)
    assert str(e.value) == (
        f"s3://{bucket['bucket']}/ckpts/{PARTIALS}/ck: access denied for write; the credentials "
        f"need s3:PutObject on bucket {bucket['bucket']!r}"
    )
    assert proxy.failed == 0  # a refusal is not retried


def test_no_such_bucket(s3: Server, tmp_path: Path) -> None:
    m = build(s3_config(s3.url, "no-such-bucket"))
    with pytest.raises(CheckpointStorageError) as e:
        m.check_access()
    assert "no such bucket 'no-such-bucket'; create it or fix checkpoint_storage.bucket" in str(
        e.value
    )


def test_unreachable_store_is_one_line(tmp_path: Path) -> None:
    from tests.storage.servers import free_port

    m = build(s3_config(f"http://127.0.0.1:{free_port()}", "b"))
    assert isinstance(m, ObjectStoreManager)
    m.retries, m.backoff = 2, 0.01
    with pytest.raises(CheckpointStorageError, match=r"still failing after 2 tries.*reachable"):
        m.check_access()


def test_a_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for package, config, extra in [
        ("s3fs", {"type": "s3", "bucket": "b"}, "s3"),
        ("gcsfs", {"type": "gcs", "bucket": "b"}, "gcs"),
        ("adlfs", {"type": "azure", "container": "c", "connection_string": "x"}, "azure"),
    ]:
        monkeypatch.setitem(sys.modules, package, None)  # not importable
        with pytest.raises(StorageConfigError) as e:
            build(config)
        assert str(e.value).endswith(
            f"needs the {package} package: pip install 'trialkit[{extra}]'"
        )


def test_files_move_in_parallel(proxy: FaultyProxy, bucket: dict[str, Any], tmp_path: Path) -> None:
    m = via(proxy, bucket)
    names = files(tmp_path / "src", 8, 200_000)
    m.upload(tmp_path / "src", "ck", names)
    assert proxy.max_inflight > 1
    proxy.max_inflight = 0
    m.download("ck", tmp_path / "out")
    assert proxy.max_inflight > 1


def test_a_big_file_goes_in_parts_without_being_read_whole(
    bucket: dict[str, Any], tmp_path: Path
) -> None:
    """A 160 MB file: uploaded as a multipart upload (its ETag says how many parts), and the
    uploading process's peak memory grows by far less than the file's size."""
    big = tmp_path / "src" / "big.bin"
    big.parent.mkdir()
    with open(big, "wb") as f:
        for _ in range(160):
            f.write(os.urandom(2**20))
    script = textwrap.dedent(
        f"""
        import json, resource, sys
        from trialkit.storage import build
        m = build(json.loads(sys.argv[1]))
        m.check_access()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        m.upload({str(big.parent)!r}, "big", ["big.bin"])
        m.download("big", {str(tmp_path / "out")!r})
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
        """
    )
    import json

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(bucket)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    grown_mb = int(proc.stdout.strip().splitlines()[-1])
    assert grown_mb < 100, f"peak memory grew by {grown_mb} MB for a 160 MB file"
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=bucket["endpoint_url"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    etag = s3.head_object(Bucket=bucket["bucket"], Key="ckpts/big/big.bin")["ETag"]
    assert etag.strip('"').endswith("-20")  # 160 MB in 8 MB parts
    assert (tmp_path / "out" / "big.bin").stat().st_size == 160 * 2**20
