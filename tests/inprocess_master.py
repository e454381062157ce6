"""The master's app in-process: a real Store (SQLite in a temp dir, or any URL) and a real Engine
that is not started, so no trial process is ever launched; requests go through a TestClient."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trialkit.master.api._app import create_app
from trialkit.master.engine._engine import Engine, EngineSettings
from trialkit.store import Store

TOKEN = "test-admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

#: A config the app accepts: one trial of a command entrypoint.
SINGLE = {
    "name": "inprocess",
    "entrypoint": "python3 train.py",
    "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
}


def _model_def(files: dict[str, str]) -> str:
    """A packed model directory (base64 tar.gz, as the CLI sends it) holding ``files``."""
    import base64
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buf.getvalue()).decode()


#: The model directory SINGLE's entrypoint needs (create checks that train.py is in it).
MODEL_DEF = _model_def({"train.py": "print('never run: the engine is not started')\n"})


@dataclass
class InProcessMaster:
    client: Any  # fastapi.testclient.TestClient
    store: Store
    engine: Engine
    app: Any

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        """One authenticated request; ``body`` is sent as JSON (NaN and inf allowed)."""
        import json

        content = None if body is None else json.dumps(body, allow_nan=True)
        headers = {**AUTH, "content-type": "application/json"}
        return self.client.request(method, path, content=content, headers=headers, **kwargs)

    def create(self, config: dict[str, Any] | None = None) -> int:
        body = {"config": config or SINGLE, "model_def": MODEL_DEF}
        resp = self.call("POST", "/api/v1/experiments", body)
        assert resp.status_code == 200, resp.text
        return int(resp.json()["experiment"]["id"])


@contextmanager
def served(app: Any) -> Iterator[str]:
    """Serve ``app`` on a free loopback port in a thread; yields its URL."""
    import threading
    import time

    import uvicorn

    from trialkit.rendezvous import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the in-process server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def inprocess_master(home: Path, url: str | None = None) -> Iterator[InProcessMaster]:
    """An app over a fresh store in ``home`` (or at ``url``); closed on exit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    home.mkdir(parents=True, exist_ok=True)
    store = Store(url) if url else Store.at(home)
    engine = Engine(
        store, EngineSettings(home=home, slots=2), "http://127.0.0.1:9", TOKEN, home / "master.json"
    )
    app = create_app(store, engine, TOKEN)
    client = TestClient(app, raise_server_exceptions=False)
    try:
        yield InProcessMaster(client, store, engine, app)
    finally:
        client.close()
        store.close()
