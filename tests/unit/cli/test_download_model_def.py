"""``trialkit e download-model-def`` / ``det e download-model-def`` against an in-process master:
the stored model directory comes back as Determined's ``experiment_<id>_model_def.tgz``."""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.inprocess_master import (
    SINGLE,
    TOKEN,
    InProcessMaster,
    _model_def,
    inprocess_master,
    served,
)
from trialkit.cli import _common, cli
from trialkit.cli._det import main as det_main
from trialkit.client import MasterClient

FILES = {"train.py": "print('hi')\n", "lib/util.py": "X = 1\n"}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        resp = m.call(
            "POST", "/api/v1/experiments", {"config": SINGLE, "model_def": _model_def(FILES)}
        )
        assert resp.status_code == 200, resp.text
        yield m


@pytest.fixture
def runner(api: InProcessMaster, monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    with served(api.app) as url:
        client = MasterClient(url, TOKEN)
        monkeypatch.setattr(_common, "get_client", lambda start=True: client)
        yield CliRunner()


def _members(tgz: Path) -> dict[str, str]:
    with tarfile.open(tgz, "r:gz") as tar:
        return {
            m.name: tar.extractfile(m).read().decode()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }


def test_trialkit_writes_the_stored_model_dir_as_determined_named_tgz(
    runner: CliRunner, tmp_path: Path
) -> None:
    out = runner.invoke(cli, ["e", "download-model-def", "1", "-o", str(tmp_path / "o")])
    assert out.exit_code == 0, out.output
    assert _members(tmp_path / "o" / "experiment_1_model_def.tgz") == FILES
    out = runner.invoke(
        cli, ["e", "download-model-def", "1", "-o", str(tmp_path / "u"), "--unpack"]
    )
    assert out.exit_code == 0, out.output
    assert (tmp_path / "u" / "lib" / "util.py").read_text() == "X = 1\n"


def test_det_download_model_def_maps(runner: CliRunner, tmp_path: Path) -> None:
    """Determined's spelling, --output-dir included, runs trialkit's command."""
    with pytest.raises(SystemExit) as info:
        det_main(["e", "download-model-def", "1", "--output-dir", str(tmp_path)])
    assert info.value.code in (0, None)
    assert _members(tmp_path / "experiment_1_model_def.tgz") == FILES


def test_the_route_needs_the_token_and_an_experiment(api: InProcessMaster) -> None:
    assert api.client.get("/api/v1/experiments/1/model_def").status_code == 401
    assert api.call("GET", "/api/v1/experiments/9/model_def").status_code == 404
