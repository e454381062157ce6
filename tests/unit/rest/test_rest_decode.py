"""The client reads the master's answers into the response models without pydantic."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trialkit.rest import (
    BestTrial,
    ExperimentDescription,
    ExperimentState,
    MetricsStored,
    ResponseError,
    SearcherOperation,
    TrialLogs,
    TrialState,
    decode,
)


def test_nested_models_optional_fields_and_unknown_keys() -> None:
    logs = decode(
        TrialLogs,
        {
            "logs": [{"id": 1, "trial_id": 2, "run_id": 1, "line": "hi", "ts": 1.5, "new": 0}],
            "trial_state": "ACTIVE",
            "running": True,
            "added_by_a_newer_master": [1, 2],
        },
    )
    assert logs.logs[0].line == "hi" and logs.running is True
    assert decode(SearcherOperation, {"length": None, "completed": True}).length is None
    assert decode(MetricsStored, {"stored": 2}) == MetricsStored(stored=2, duplicate=False)
    best = decode(BestTrial, {"trial_id": 1, "metric": "loss", "value": 0.5, "hparams": {}})
    assert best.metric == "loss"


def test_a_wrong_shape_names_the_field() -> None:
    with pytest.raises(ResponseError, match=r"response\.logs\[0\]: expected an object"):
        decode(TrialLogs, {"logs": [3], "trial_state": "ACTIVE", "running": True})
    with pytest.raises(ResponseError, match=r"response\.experiment: missing"):
        decode(ExperimentDescription, {"trials": []})


def test_states_are_the_contracts_enums_and_still_read_and_print_as_their_strings() -> None:
    logs = decode(TrialLogs, {"logs": [], "trial_state": "COMPLETED", "running": False})
    assert logs.trial_state is TrialState.COMPLETED and logs.trial_state.ended
    assert logs.trial_state == "COMPLETED" and f"{logs.trial_state}|{logs.trial_state:>10}" == (
        "COMPLETED| COMPLETED"
    )
    assert not TrialState.ACTIVE.ended and not ExperimentState.STOPPING_ERROR.ended
    assert ExperimentState.CANCELED.ended
    assert json.dumps({"state": TrialState.ERROR}, indent=2) == '{\n  "state": "ERROR"\n}'


def test_an_unknown_state_names_the_field_and_the_known_states() -> None:
    with pytest.raises(
        ResponseError, match=r"response\.trial_state: 'RUNNING' is not a TrialState"
    ):
        decode(TrialLogs, {"logs": [], "trial_state": "RUNNING", "running": True})


def test_the_client_side_imports_no_pydantic_fastapi_or_store() -> None:
    code = (
        "import sys, trialkit.client._master_client, trialkit.core._http, trialkit.rest;"
        "bad = [m for m in ('pydantic', 'fastapi', 'sqlalchemy') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
