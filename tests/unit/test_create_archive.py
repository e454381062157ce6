"""The model definition sent to the create route is checked when the experiment is created
(issue 12 item 2's leftovers): an archive a trial's launch could not unpack is refused with one
line naming model_def, and no experiment is made; ``check_archive`` applies unpack's rules
without extracting anything."""

from __future__ import annotations

import base64
import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.inprocess_master import SINGLE, InProcessMaster, inprocess_master
from trialkit._modeldir import ModelDirError, check_archive, pack, unpack


def _file(name: str, data: bytes = b"print('hi')\n") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, None if data is None else io.BytesIO(data))
    return buf.getvalue()


def _device(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.CHRTYPE
    return info, None


TRAIN = _file("train.py")

BAD = {
    "garbage": b"not a tarball",
    "plain-tar": b"\0" * 1024,
    "truncated": _tar(TRAIN, _file("big.bin", b"x" * 100_000))[:200],
    "absolute-symlink": _tar(TRAIN, _link("data", "/etc/hostname")),
    "escaping-symlink": _tar(TRAIN, _link("data", "../../outside")),
    "absolute-hardlink": _tar(TRAIN, _link("data", "/etc/hostname", tarfile.LNKTYPE)),
    "dotdot-member": _tar(TRAIN, _file("../escape.py")),
    "device": _tar(TRAIN, _device("tty")),
    # Inside by their text, outside once the link "s" -> "." is on disk (unpack finds these).
    "up-through-own-link": _tar(TRAIN, _link("s", "."), _file("s/s/../../escape.py")),
    "link-up-through-own-link": _tar(TRAIN, _link("a", "."), _link("b", "a/a/../..")),
}


@pytest.mark.parametrize("archive", BAD.values(), ids=BAD.keys())
def test_check_archive_refuses_what_unpack_refuses(tmp_path: Path, archive: bytes) -> None:
    with pytest.raises(ModelDirError, match="cannot be unpacked") as info:
        check_archive(archive)
    assert "\n" not in str(info.value)
    with pytest.raises(ModelDirError):
        unpack(archive, tmp_path / "a" / "workdir")
    assert not list(tmp_path.glob("**/escape.py"))


def test_check_archive_accepts_what_pack_makes(tmp_path: Path) -> None:
    src = tmp_path / "model"
    (src / "pkg" / "sub").mkdir(parents=True)
    (src / "pkg" / "real.txt").write_text("contents")
    (src / "pkg" / "sub" / "up.txt").symlink_to("../real.txt")
    (src / "alias.txt").symlink_to("pkg/real.txt")
    (src / "pkg_alias").symlink_to("pkg")
    (src / "train.py").write_text("print('hi')\n")
    archive = pack(src)
    check_archive(archive)
    check_archive(_tar(TRAIN, _file("./pkg/../pkg2/x.py")))  # '..' through no link: fine
    unpack(archive, tmp_path / "out")


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        yield m


@pytest.mark.parametrize("name", ["garbage", "absolute-symlink", "up-through-own-link"])
def test_create_refuses_an_archive_that_cannot_be_unpacked(api: InProcessMaster, name: str) -> None:
    model_def = base64.b64encode(BAD[name]).decode()
    resp = api.call("POST", "/api/v1/experiments", {"config": SINGLE, "model_def": model_def})
    assert resp.status_code == 400, resp.text
    [error] = resp.json()["detail"]["errors"]
    assert error.startswith("model_def: cannot be unpacked") and "\n" not in error, error
    assert api.store.list_experiments() == []


def _fifo(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.FIFOTYPE
    return info, None


def test_a_refused_member_is_named_without_blaming_the_packing_tool(api: InProcessMaster) -> None:
    # An archive as an older trialkit packed a model directory holding a FIFO.
    model_def = base64.b64encode(_tar(TRAIN, _fifo("data/pipe"))).decode()
    resp = api.call("POST", "/api/v1/experiments", {"config": SINGLE, "model_def": model_def})
    assert resp.status_code == 400, resp.text
    [error] = resp.json()["detail"]["errors"]
    assert error.startswith("model_def: cannot be unpacked: 'data/pipe' is a special file"), error
    assert "add it to .trialkitignore" in error and "packs it" not in error, error
