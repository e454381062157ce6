"""The SDK's ``Checkpoint.download(path, mode=DownloadMode.…)`` against a real master (issue 19):
DIRECT reads the storage, MASTER goes through the master's checkpoint archive route, AUTO
falls back to MASTER when this process cannot reach the storage; an unknown mode is refused.
The CLI's ``checkpoint download --mode`` is the same call."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import Master
from tests.integration.test_checkpoint_download import SLEEPER, report
from trialkit.cli import main as cli_main
from trialkit.errors import APIError
from trialkit.experimental import client
from trialkit.storage import (
    MANIFEST_NAME,
    CheckpointIntegrityError,
    CheckpointNotFound,
    SharedFSStorageManager,
    build,
    list_directory,
)

pytestmark = pytest.mark.integration


def saved_checkpoint(master: Master, tmp_path: Path) -> tuple[Path, Path]:
    """A checkpoint (with its manifest) in the experiment's storage, reported; (its dir, src)."""
    exp = master.client.request("POST", "/api/v1/experiments", json_body={"config": SLEEPER})
    storage = exp["experiment"]["config"]["checkpoint_storage"]
    manager = build(storage)
    assert isinstance(manager, SharedFSStorageManager)
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "model.pt").write_bytes(b"weights" * 1000)
    (src / "sub" / "opt.pt").write_bytes(b"optimizer")
    manager.upload(src, "c1", sorted(list_directory(src)))
    report(master, "c1", storage)
    return manager.base_path / "c1", src


def same_files(a: Path, b: Path) -> bool:
    files = list_directory(a)
    return files == list_directory(b) and all(
        (a / rel).read_bytes() == (b / rel).read_bytes() for rel in files if not rel.endswith("/")
    )


def test_download_modes(
    master: Master,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stored, src = saved_checkpoint(master, tmp_path)
    ckpt = client.get_checkpoint("c1")
    for mode in (client.DownloadMode.DIRECT, client.DownloadMode.MASTER, "auto"):
        out = tmp_path / f"out-{mode}"
        assert ckpt.download(str(out), mode=mode) == str(out)
        assert same_files(out, src), mode
        assert not (out / MANIFEST_NAME).exists()

    with pytest.raises(
        ValueError, match=r"download mode 'fast' is not one of AUTO, DIRECT, MASTER"
    ):
        ckpt.download(str(tmp_path / "never"), mode="fast")
    assert not (tmp_path / "never").exists()

    # This process cannot see the storage (as on a machine without the mount); the master can.
    def not_mounted_here(*_: object, **__: object) -> None:
        raise CheckpointNotFound(f"checkpoint c1 not found in {stored.parent}")

    with monkeypatch.context() as patched:
        patched.setattr(SharedFSStorageManager, "download", not_mounted_here)
        with pytest.raises(CheckpointNotFound):
            ckpt.download(str(tmp_path / "direct"), mode=client.DownloadMode.DIRECT)
        auto = tmp_path / "auto-fallback"
        ckpt.download(str(auto))  # AUTO is the default
    assert same_files(auto, src)
    assert "downloading through the master" in capsys.readouterr().err

    # A damaged file is refused however it is downloaded, naming the file.
    (stored / "sub" / "opt.pt").write_bytes(b"optimizeR")
    with pytest.raises(CheckpointIntegrityError, match=r"sub/opt\.pt: crc32 differs"):
        ckpt.download(str(tmp_path / "bad-direct"), mode="direct")
    with pytest.raises(APIError, match=r"sub/opt\.pt: crc32 differs") as err:
        ckpt.download(str(tmp_path / "bad-master"), mode="master")
    assert err.value.status == 409
    refused = master.cli(
        "checkpoint", "download", "c1", "-o", str(tmp_path / "bad-cli"), check=False
    )
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.strip().count("\n") == 0, refused.stderr
    assert "sub/opt.pt: crc32 differs" in refused.stderr and "Traceback" not in refused.stderr


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI's entry point in this process (so the test can take the storage away from it):
    its exit code, stdout and stderr."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        cli_main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_cli_download_modes(
    master: Master,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``trialkit checkpoint download --mode auto|direct|master`` (issue 19): the SDK's modes."""
    _, src = saved_checkpoint(master, tmp_path)
    for mode in ("direct", "master", "AUTO", None):
        out = tmp_path / f"cli-{mode}"
        flags = ["--mode", mode] if mode else []
        done = master.cli("checkpoint", "download", "c1", "-o", str(out), *flags)
        assert f"checkpoint c1 downloaded to {out}" in done.stdout
        assert same_files(out, src), mode

    bad = master.cli("checkpoint", "download", "c1", "--mode", "fast", check=False)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0, bad.stderr
    assert "'fast' is not one of 'auto', 'direct', 'master'" in bad.stderr, bad.stderr
    both = master.cli(
        "checkpoint", "download", "c1", "--mode", "master", "--storage-path", str(tmp_path),
        check=False,
    )  # fmt: skip
    assert both.returncode == 2, both.stderr
    assert "--storage-path is read from this machine: use --mode direct or auto" in both.stderr

    # This machine cannot see the storage; the master can.
    def not_mounted_here(*_: object, **__: object) -> None:
        raise CheckpointNotFound("checkpoint c1 not found in /not/mounted/here")

    monkeypatch.setattr(SharedFSStorageManager, "download", not_mounted_here)
    download = ("checkpoint", "download", "c1", "-o")
    code, _, err = _cli(capsys, *download, str(tmp_path / "d"), "--mode", "direct")
    assert code == 2 and err == "trialkit: error: checkpoint c1 not found in /not/mounted/here\n"
    code, _, err = _cli(capsys, *download, str(tmp_path / "m"), "--mode", "master")
    assert code == 0 and err == "" and same_files(tmp_path / "m", src)
    code, _, err = _cli(capsys, *download, str(tmp_path / "a"))
    assert code == 0 and same_files(tmp_path / "a", src)
    assert "no direct access to its storage" in err and "downloading through the master" in err
