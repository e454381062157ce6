"""Fuzzing the master's REST API: for every route of the real app (in-process, over a real
SQLite store and an Engine that launches nothing), path and query parameters and JSON bodies
are generated from the app's OpenAPI schema, then corrupted with hostile values (huge ints,
NaN, inf, deep nesting, wrong types) or replaced by garbage. Every answer must be below 500,
carry no traceback, and every 4xx must say what is wrong (a 422 names each field). Figures are
printed at the end of the module."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.faults.fuzz_support import (
    BASE_CONFIGS,
    FuzzFigures,
    RawJson,
    config_paths,
    corrupted,
    from_schema,
    hostile,
    json_values,
    mutated_configs,
    print_figures,
    to_json,
)
from tests.inprocess_master import AUTH, InProcessMaster, inprocess_master, served
from trialkit.config import ExperimentConfig
from trialkit.rest import _routes as rest_routes

QUICK = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SLOW = settings(QUICK, max_examples=400)
HEADERS = {**AUTH, "content-type": "application/json"}
FIELD_ERROR = re.compile(r"^(body|query|path|header)\b[^:]*: \S")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessMaster]:
    """One app for the module, with a few experiments, trials, metrics and a checkpoint."""
    with inprocess_master(tmp_path_factory.mktemp("fuzz-rest")) as m:
        for config in (BASE_CONFIGS[0], BASE_CONFIGS[1], BASE_CONFIGS[3]):
            m.create(config)
        m.call(
            "POST",
            "/api/v1/trials/1/metrics",
            {"reports": [{"group": "validation", "steps_completed": 1, "metrics": {"loss": 1}}]},
        )
        yield m


@pytest.fixture(scope="module")
def stream_url(api: InProcessMaster) -> Iterator[str]:
    """The same app served over a socket, for the event streams: the in-process test client
    reads a whole response, and a stream of server-sent events never ends."""
    with served(api.app) as url:
        yield url


#: Routes whose 200 answer is an endless stream of server-sent events.
STREAMS = {rest_routes.EXPERIMENT_EVENTS, rest_routes.EXPERIMENTS_EVENTS}


@pytest.fixture(scope="module")
def figures(request: pytest.FixtureRequest) -> Iterator[FuzzFigures]:
    fig = FuzzFigures("REST")
    yield fig
    print_figures(request.config, fig)


def _routes() -> list[tuple[str, str, dict[str, Any]]]:
    import tempfile

    with inprocess_master(Path(tempfile.mkdtemp(prefix="tk-openapi-"))) as m:
        spec = m.app.openapi()
    routes = [
        (method.upper(), path, {**op, "_components": spec["components"]["schemas"]})
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
    ]
    return sorted(routes, key=lambda r: (r[1], r[0]))


ROUTES = _routes()
CONFIG_PATHS = config_paths(ExperimentConfig)


def as_text(value: Any) -> str:
    """A parameter value as it travels in a URL."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    if isinstance(value, RawJson):
        return value.text
    return to_json(value)


def param_strategy(param: dict[str, Any], components: dict[str, Any]) -> Any:
    """Valid values (long polls kept short), existing ids, and hostile ones, as URL text."""
    name = param["name"]
    if name == "timeout_seconds":
        valid = st.floats(min_value=0, max_value=0.05)
    elif name.endswith("_id") and param["in"] == "path":
        valid = st.integers(1, 4)
    else:
        valid = from_schema(param["schema"], components)
    hostile_text = st.sampled_from(["nan", "inf", "-inf", "1e400", "9" * 40, "-1", "", "abc"])
    # Cut to what fits a URL (httpx refuses over 64 KiB; a server would answer 414).
    # As bytes: a lone surrogate travels as the invalid UTF-8 a hostile client could send.
    return st.one_of(valid, hostile, hostile_text).map(
        lambda v: as_text(v)[:3000].encode("utf-8", "surrogatepass")
    )


def body_strategy(path: str, op: dict[str, Any]) -> Any:
    """JSON text: schema-valid, corrupted, random, garbage or hostile."""
    components = op["_components"]
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    valid = from_schema(schema, components)
    values = [valid, corrupted(valid), json_values, hostile]
    if path == "/api/v1/experiments":
        values.append(st.fixed_dictionaries({"config": mutated_configs(CONFIG_PATHS)}))
    garbage = st.one_of(
        st.binary(max_size=64),
        st.sampled_from([b"", b"{", b'{"a":', b"[1,2", b"null", b"NaN", b"\xff\xfe", b"{}" * 50]),
    )
    return st.one_of(
        st.one_of(values).map(lambda v: to_json(v).encode("utf-8", "surrogatepass")), garbage
    )


@st.composite
def requests(draw: Any, method: str, path: str, op: dict[str, Any]) -> tuple[str, str, bytes]:
    components = op["_components"]
    url = path
    query: dict[str, bytes] = {}
    for param in op.get("parameters", []):
        if param["in"] == "header":
            continue
        if param["in"] == "path":
            text = draw(param_strategy(param, components))
            url = url.replace("{" + param["name"] + "}", urllib.parse.quote(text, safe=""))
        elif draw(st.booleans()):
            query[param["name"]] = draw(param_strategy(param, components))
    if query:
        url += "?" + urllib.parse.urlencode(query)
    body = draw(body_strategy(path, op)) if "requestBody" in op else b""
    return method, url, body


def _stream_answer(base: str, method: str, url: str) -> httpx.Response:
    """A stream's status, headers and (for an error) body; a 200 stream is left after its head."""
    with httpx.Client(base_url=base, headers=AUTH, trust_env=False, timeout=30) as http:
        with http.stream(method, url) as resp:
            if resp.status_code != 200:
                resp.read()
            return resp


def check(
    api: InProcessMaster,
    figures: FuzzFigures,
    request: tuple[str, str, bytes],
    stream_base: str | None = None,
) -> None:
    method, url, body = request
    if stream_base is not None:
        resp = _stream_answer(stream_base, method, url)
        if resp.status_code == 200:
            assert resp.headers["content-type"].startswith("text/event-stream")
            figures.inputs += 1
            figures.outcomes["200"] += 1
            return
    else:
        resp = api.client.request(method, url, content=body or None, headers=HEADERS)
    figures.inputs += 1
    figures.outcomes[str(resp.status_code)] += 1
    if resp.status_code >= 500:
        figures.server_errors += 1
    if "Traceback" in resp.text:
        figures.tracebacks += 1
    assert resp.status_code < 500, f"{method} {url[:200]} -> {resp.status_code}: {resp.text[:300]}"
    assert "Traceback" not in resp.text
    if 400 <= resp.status_code < 500:
        detail = resp.json()["detail"]
        assert detail, f"{method} {url[:200]}: an empty error"
        if resp.status_code == 422:
            for line in detail["errors"]:
                assert FIELD_ERROR.match(line), f"{method} {url[:200]}: {line!r} names no field"


@pytest.mark.parametrize(("method", "path", "op"), ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
def test_route_survives_fuzzed_input(
    api: InProcessMaster,
    figures: FuzzFigures,
    request: pytest.FixtureRequest,
    method: str,
    path: str,
    op: dict[str, Any],
) -> None:
    stream_base = request.getfixturevalue("stream_url") if path in STREAMS else None

    @QUICK
    @given(fuzzed=requests(method, path, op))
    def run(fuzzed: tuple[str, str, bytes]) -> None:
        check(api, figures, fuzzed, stream_base)

    run()


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path", "op"), ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
def test_route_survives_fuzzed_input_long(
    api: InProcessMaster,
    figures: FuzzFigures,
    request: pytest.FixtureRequest,
    method: str,
    path: str,
    op: dict[str, Any],
) -> None:
    stream_base = request.getfixturevalue("stream_url") if path in STREAMS else None

    @SLOW
    @given(fuzzed=requests(method, path, op))
    def run(fuzzed: tuple[str, str, bytes]) -> None:
        check(api, figures, fuzzed, stream_base)

    run()
