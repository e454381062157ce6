"""``location_mismatch``: two checkpoint_storage blocks put checkpoints in the same place when
their type and place fields agree; credentials and GC settings do not count."""

from __future__ import annotations

from typing import Any

import pytest

from trialkit.storage import location_mismatch

S3 = {"type": "s3", "bucket": "b", "prefix": "runs/1", "save_trial_best": 1}
AZURE = {"type": "azure", "container": "c", "connection_string": "AccountName=acct;AccountKey=k1"}


@pytest.mark.parametrize(
    "given",
    [
        {**S3, "access_key": "other", "secret_key": "keys", "save_trial_best": 5},
        {**S3, "prefix": "/runs/1/"},
        {**AZURE, "connection_string": "AccountKey=k2;AccountName=acct"},
    ],
    ids=["other-credentials", "prefix-slashes", "azure-other-key"],
)
def test_the_same_place_is_accepted(given: dict[str, Any]) -> None:
    configured = AZURE if given["type"] == "azure" else S3
    assert location_mismatch(given, configured) is None


@pytest.mark.parametrize(
    ("given", "configured", "expected"),
    [
        ({**S3, "bucket": "other"}, S3, "bucket 'other' is not 'b'"),
        ({**S3, "prefix": "runs"}, S3, "prefix 'runs' is not 'runs/1'"),
        ({**S3, "endpoint_url": "http://x"}, S3, "endpoint_url 'http://x' is not ''"),
        ({**S3, "type": "gcs"}, S3, "type 'gcs' is not 's3'"),
        (
            {**AZURE, "connection_string": "AccountName=evil;AccountKey=k1"},
            AZURE,
            "account 'evil' is not 'acct'",
        ),
    ],
)
def test_another_place_names_the_field(
    given: dict[str, Any], configured: dict[str, Any], expected: str
) -> None:
    assert location_mismatch(given, configured) == expected
