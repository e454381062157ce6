"""The REST contract on a real master: /openapi.json types every route's answer, its URLs are
the ones ``trialkit.rest.routes`` names, and per-batch training metrics can be read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trialkit.rest import routes

from .conftest import Master, write_script

pytestmark = pytest.mark.integration


def _route_templates() -> set[str]:
    """Every JSON route template of ``trialkit.rest.routes``, the action route expanded (the
    ``/ui/`` routes serve pages and files, and the metric stream is a WebSocket: both outside
    the JSON API's schema; docs/reference/rest.md describes the stream's messages)."""
    found = {
        v
        for k, v in vars(routes).items()
        if k.isupper() and isinstance(v, str) and not v.startswith("/ui/")
    }
    found.discard(routes.EXPERIMENT_ACTION)
    found.discard(routes.TRIAL_METRICS_STREAM)
    found |= {
        routes.path(routes.EXPERIMENT_ACTION, experiment_id="{experiment_id}", action=a)
        for a in routes.EXPERIMENT_ACTIONS
    }
    return found


def _typed(schema: dict[str, Any], components: dict[str, Any]) -> str | None:
    """Why ``schema`` is not a typed object with named fields (None when it is)."""
    ref = schema.get("$ref")
    if not ref:
        return f"not a named model: {schema}"
    model = components[ref.rsplit("/", 1)[-1]]
    if model.get("type") != "object" or not model.get("properties"):
        return f"{ref} has no fields: {model}"
    return None


def test_openapi_types_every_route_answer(master: Master) -> None:
    spec = master.client.request("GET", "/openapi.json")
    components = spec["components"]["schemas"]
    problems = []
    for path, operations in spec["paths"].items():
        for method, op in operations.items():
            ok = {code: r for code, r in op["responses"].items() if code.startswith("2")}
            schemas = [
                r.get("content", {}).get("application/json", {}).get("schema") for r in ok.values()
            ]
            if not schemas or any(s is None for s in schemas):
                problems.append(f"{method.upper()} {path}: no 2xx JSON schema")
                continue
            problems += [
                f"{method.upper()} {path}: {why}"
                for why in (_typed(s, components) for s in schemas)
                if why
            ]
    assert problems == []
    assert set(spec["paths"]) == _route_templates()
    # The read models nest typed models, not free-form dicts.
    trial = components["TrialOut"]["properties"]
    assert trial["latest_validation"]["anyOf"][0] == {"$ref": "#/components/schemas/MetricOut"}
    best = components["BestTrial"]["properties"]
    assert set(best) == {"trial_id", "metric", "value", "hparams", "checkpoint"}


BATCHES_TRIAL = """
from trialkit import core

with core.init() as ctx:
    batches = [{"loss": 0.5, "step": 1}, {"loss": 0.25, "step": 2}]
    ctx.train.report_training_metrics(
        steps_completed=2, metrics={"loss": 0.375}, batch_metrics=batches
    )
    ctx.train.report_training_metrics(steps_completed=3, metrics={"loss": 0.1})
    ctx.train.report_validation_metrics(steps_completed=3, metrics={"loss": 0.2})
"""


def test_batch_metrics_are_readable(master: Master, tmp_path: Path) -> None:
    model = tmp_path / "model"
    write_script(model, "trial.py", BATCHES_TRIAL)
    config = {
        "name": "batches",
        "entrypoint": "python3 trial.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 3}},
        "max_restarts": 0,
    }
    exp = master.create(config, model)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=120)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    trial_id = desc["trials"][0]["id"]

    [report] = master.client.trial_batch_metrics(trial_id).reports
    assert report.steps_completed == 2
    assert report.batch_metrics == [{"loss": 0.5, "step": 1}, {"loss": 0.25, "step": 2}]

    text = master.cli("trial", "describe", str(trial_id), "--metrics").stdout
    assert "batch metrics" in text
    assert "loss=0.25, step=2" in text
    assert "loss=0.375" in text  # the report's own (averaged) metrics
    out = json.loads(master.cli("trial", "describe", str(trial_id), "--metrics", "--json").stdout)
    assert [m["steps_completed"] for m in out["training_metrics"]] == [2, 3]
    assert out["batch_metrics"][0]["batch_metrics"][1] == {"loss": 0.25, "step": 2}
    assert out["batch_metrics"][0]["steps_completed"] == 2
