"""``bind_mounts`` at create (in-process master): an absolute container_path that cannot be
made, or a relative one that leaves the working copy, is one line (issue 32, 15e)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inprocess_master import MODEL_DEF, SINGLE, inprocess_master


def _create(tmp_path: Path, mounts: list[dict[str, str]]) -> tuple[int, str]:
    config = {**SINGLE, "bind_mounts": mounts}
    with inprocess_master(tmp_path / "master") as m:
        resp = m.call("POST", "/api/v1/experiments", {"config": config, "model_def": MODEL_DEF})
    return resp.status_code, resp.text


def test_mounts_that_can_be_made_are_accepted_without_a_warning(tmp_path: Path) -> None:
    mounts = [
        {"host_path": str(tmp_path / "ckpts"), "container_path": "./checkpoint_dir"},
        {"host_path": str(tmp_path / "data"), "container_path": str(tmp_path / "mnt")},
    ]
    status, text = _create(tmp_path, mounts)
    assert status == 200, text
    assert "bind_mounts" not in text.split('"warnings"')[1]


@pytest.mark.parametrize(
    ("container_path", "expected"),
    [
        ("/no-such-parent-dir/ckpt", "its parent /no-such-parent-dir is not a writable directory"),
        ("EXISTING", "already exists; trialkit links it to host_path and replaces nothing"),
        ("../outside", "leaves the trial's working directory; drop the '..'"),
    ],
)
def test_a_mount_that_cannot_be_made_fails_create_with_one_line(
    tmp_path: Path, container_path: str, expected: str
) -> None:
    if container_path == "EXISTING":
        (tmp_path / "taken").mkdir()
        container_path = str(tmp_path / "taken")
    status, text = _create(tmp_path, [{"host_path": "/tmp", "container_path": container_path}])
    assert status == 400, text
    assert "bind_mounts[0].container_path: " in text and expected in text
