"""The master's REST routes (CLI describe/--json and the web UI read these) never return a
checkpoint storage credential: configs and checkpoint records come back masked, while the
master itself still reads the real values (docs/security.md "Storage credentials")."""

from __future__ import annotations

from pathlib import Path

from tests.inprocess_master import SINGLE, inprocess_master
from trialkit.config import parse_config
from trialkit.store import ExperimentState

MASK = "********"
STORAGE = {
    "type": "s3",
    "bucket": "ckpts",
    "access_key": "AKIA-API-TEST-KEY",
    "secret_key": "api-test-secret-value",
    "endpoint_url": "http://127.0.0.1:9",
}


def test_rest_routes_never_return_a_storage_credential(tmp_path: Path) -> None:
    with inprocess_master(tmp_path / "home") as api:
        config = parse_config({**SINGLE, "checkpoint_storage": STORAGE}).as_dict()
        exp = api.store.create_experiment(
            name="secrets", config=config, state=ExperimentState.COMPLETED
        )
        trial = api.store.create_trial(experiment_id=exp.id, request_id="r", hparams={}, seed=1)
        api.store.add_checkpoint(
            uuid="c1",
            trial_id=trial.id,
            experiment_id=exp.id,
            run_id=0,
            steps_completed=1,
            metadata={},
            resources={"model.pt": 1},
            storage=STORAGE,  # as a trial reports it: the experiment's storage
        )
        paths = [
            "/api/v1/experiments",
            "/api/v1/experiments?all=true",
            f"/api/v1/experiments/{exp.id}",
            f"/api/v1/experiments/{exp.id}/summary",
            f"/api/v1/experiments/{exp.id}/checkpoints",
            f"/api/v1/experiments/{exp.id}/checkpoints/best?limit=5",
            f"/api/v1/experiments/{exp.id}/trials",
            f"/api/v1/trials/{trial.id}",
            "/api/v1/checkpoints/c1",
        ]
        for path in paths:
            resp = api.call("GET", path)
            assert resp.status_code == 200, (path, resp.text)
            for secret in ("AKIA-API-TEST-KEY", "api-test-secret-value"):
                assert secret not in resp.text, path
        described = api.call("GET", f"/api/v1/experiments/{exp.id}").json()
        shown = described["experiment"]["config"]["checkpoint_storage"]
        assert (shown["access_key"], shown["secret_key"]) == (MASK, MASK)
        assert shown["bucket"] == "ckpts"
        checkpoint = api.call("GET", "/api/v1/checkpoints/c1").json()
        assert checkpoint["storage"]["secret_key"] == MASK
        stored = api.store.config_with_secrets(exp.id)["checkpoint_storage"]
        assert stored["secret_key"] == "api-test-secret-value"  # what the master uses
