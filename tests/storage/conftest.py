"""Object-store servers for the storage tests: one of each per session, on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.storage.servers import Server, make_bucket, missing_packages, server_fixture

if missing_packages():  # the servers and fsspec packages come with the storage tox env
    collect_ignore_glob = ["test_*.py"]

KINDS = ["s3", "gcs", "azure"]


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """Started on first use, stopped (by pid) at the end of the session."""
    started: dict[str, Server] = {}
    gens: list[Iterator[Server]] = []

    class Lazy(dict[str, Server]):
        def __missing__(self, kind: str) -> Server:
            gen = server_fixture(kind, tmp_path_factory.mktemp(kind))
            self[kind] = next(gen)
            gens.append(gen)
            return self[kind]

    lazy = Lazy(started)
    yield lazy
    for gen in gens:
        for _ in gen:
            pass


@pytest.fixture(params=KINDS)
def store_config(
    request: pytest.FixtureRequest, servers: dict[str, Server], monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """checkpoint_storage for a fresh bucket on each kind of server."""
    server = servers[request.param]
    for k, v in server.env.items():
        monkeypatch.setenv(k, v)
    return make_bucket(server)


@pytest.fixture
def s3(servers: dict[str, Server]) -> Server:
    return servers["s3"]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
