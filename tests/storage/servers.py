"""Real object-store servers on free loopback ports, for the storage tests: S3 (moto's server),
GCS (gcp-storage-emulator) and Azure Blob (Azurite from npm), each a child process stopped by
pid; and a small HTTP proxy that fails requests on purpose (transient 503s, or 403s)."""

from __future__ import annotations

import http.client
import http.server
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


_PACKAGES = (
    "moto",
    "boto3",
    "s3fs",
    "gcsfs",
    "adlfs",
    "azure.storage.blob",
    "gcp_storage_emulator",
)


def missing_packages() -> list[str]:
    """The packages these servers and clients need that are not installed."""
    missing = []
    for name in _PACKAGES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:
            found = False
        if not found:
            missing.append(name)
    return missing


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout}s")


@dataclass
class Server:
    """A server child process (its own process group) and how to reach it."""

    name: str
    port: int
    proc: subprocess.Popen[bytes]
    env: dict[str, str] = field(default_factory=dict)
    kind: str = ""  # s3, gcs or azure

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def _start(
    name: str, cmd: list[str], port: int, log: Path, env: dict[str, str] | None = None
) -> Server:
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=None if env is None else {**os.environ, **env},
        )
    server = Server(name, port, proc)
    try:
        _wait_port(port, proc, f"{name} ({' '.join(cmd)}; log {log})")
    except BaseException:
        server.stop()
        raise
    return server


def start_moto(workdir: Path) -> Server:
    port = free_port()
    cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    return _start("moto", cmd, port, workdir / "moto.log")


#: Requests moto serves before it checks credentials: creating the IAM user, its key, its policy.
_MOTO_SETUP_ACTIONS = 3


def start_moto_with_auth(workdir: Path) -> Server:
    """moto that checks every request's credentials and signature (after the IAM set-up of
    ``s3_user_keys``): a wrong or masked key is refused, as by S3."""
    port = free_port()
    cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    env = {"INITIAL_NO_AUTH_ACTION_COUNT": str(_MOTO_SETUP_ACTIONS)}
    server = _start("moto", cmd, port, workdir / "moto.log", env)
    server.kind = "s3"
    return server


def s3_user_keys(server: Server) -> tuple[str, str]:
    """A new IAM user allowed everything on ``start_moto_with_auth``'s server: its access key
    id and secret key (the only credentials the server then accepts)."""
    import boto3

    iam = boto3.client(
        "iam",
        endpoint_url=server.url,
        aws_access_key_id="setup",
        aws_secret_access_key="setup",
        region_name="us-east-1",
    )
    iam.create_user(UserName="trialkit")
    key = iam.create_access_key(UserName="trialkit")["AccessKey"]
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
    }
    iam.put_user_policy(UserName="trialkit", PolicyName="all", PolicyDocument=json.dumps(policy))
    return str(key["AccessKeyId"]), str(key["SecretAccessKey"])


def start_gcs(workdir: Path) -> Server:
    port = free_port()
    exe = shutil.which("gcp-storage-emulator") or str(
        Path(sys.executable).parent / "gcp-storage-emulator"
    )
    cmd = [exe, "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory", "-q"]
    server = _start("gcp-storage-emulator", cmd, port, workdir / "gcs.log")
    server.env = {"STORAGE_EMULATOR_HOST": server.url}
    return server


def azurite_bin() -> str | None:
    """azurite-blob from $TRIALKIT_AZURITE_BIN (the storage tox env's npm install) or PATH."""
    given = os.environ.get("TRIALKIT_AZURITE_BIN")
    if given:
        return given if Path(given).exists() else None
    return shutil.which("azurite-blob")


def start_azurite(workdir: Path) -> Server:
    exe = azurite_bin()
    if exe is None:
        pytest.skip("azurite-blob not installed (npm install azurite@3.37.0; TRIALKIT_AZURITE_BIN)")
    port = free_port()
    data = workdir / "azurite"
    data.mkdir(exist_ok=True)
    cmd = [
        exe,
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        str(port),
        "--location",
        str(data),
        "--skipApiVersionCheck",
        "--loose",
        "--disableTelemetry",
        "--silent",
    ]
    return _start("azurite", cmd, port, workdir / "azurite.log")


def azurite_connection_string(port: int) -> str:
    return (
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
        f"AccountKey={AZURITE_KEY};BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;"
    )


def s3_config(url: str, bucket: str, prefix: str | None = None) -> dict[str, Any]:
    return {
        "type": "s3",
        "bucket": bucket,
        "prefix": prefix,
        "endpoint_url": url,
        "access_key": "testing",
        "secret_key": "testing",
    }


def make_bucket(server: Server) -> dict[str, Any]:
    """A new empty bucket/container on ``server``; the checkpoint_storage config for it."""
    kind = server.kind
    name = f"tk-{uuid.uuid4().hex[:12]}"
    if kind == "s3":
        import boto3

        boto3.client(
            "s3",
            endpoint_url=server.url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        ).create_bucket(Bucket=name)
        return s3_config(server.url, name, "ckpts")
    if kind == "gcs":
        import gcsfs

        gcsfs.core.GCSFileSystem(token="anon", endpoint_url=server.url).mkdir(name)
        return {"type": "gcs", "bucket": name, "prefix": "ckpts"}
    from azure.storage.blob import BlobServiceClient

    conn = azurite_connection_string(server.port)
    BlobServiceClient.from_connection_string(conn).create_container(name)
    return {"type": "azure", "container": name, "connection_string": conn}


START = {"s3": start_moto, "gcs": start_gcs, "azure": start_azurite}


@dataclass
class FaultyProxy:
    """An HTTP proxy to ``upstream`` that answers the first ``fail_first`` requests with 503
    (SlowDown), or every request whose method is in ``deny`` with 403 (AccessDenied)."""

    upstream_port: int
    fail_first: int = 0
    deny: frozenset[str] = frozenset()
    failed: int = 0
    forwarded: int = 0
    inflight: int = 0
    max_inflight: int = 0
    methods: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                verdict = proxy._verdict(self.command)
                if verdict is not None:
                    status, code = verdict
                    xml = f"<Error><Code>{code}</Code><Message>{code}</Message></Error>".encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(xml)))
                    self.end_headers()
                    self.wfile.write(xml)
                    return
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=dict(self.headers))
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                    proxy._done()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _verdict(self, method: str) -> tuple[int, str] | None:
        with self._lock:
            if method in self.deny:
                return 403, "AccessDenied"
            if self.failed < self.fail_first:
                self.failed += 1
                return 503, "SlowDown"
            self.forwarded += 1
            self.methods.append(method)
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
            return None

    def _done(self) -> None:
        with self._lock:
            self.inflight -= 1

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)


def server_fixture(kind: str, workdir: Path) -> Iterator[Server]:
    server = START[kind](workdir)
    server.kind = kind
    try:
        yield server
    finally:
        server.stop()
