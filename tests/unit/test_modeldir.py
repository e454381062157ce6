"""Model directories: pack honours .trialkitignore/.detignore (gitignore-style), always skips
caches and VCS data, refuses oversized directories naming the culprits; unpack round-trips."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from trialkit._modeldir import ModelDirError, pack, unpack


def write(root: Path, rel: str, data: str | bytes = "x") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)


def packed_names(root: Path, **kwargs: int) -> set[str]:
    with tarfile.open(fileobj=io.BytesIO(pack(root, **kwargs)), mode="r:gz") as tar:
        return {m.name for m in tar.getmembers() if m.isfile()}


def test_round_trip_preserves_files_and_contents(tmp_path: Path) -> None:
    src = tmp_path / "model"
    write(src, "train.py", "print('hi')\n")
    write(src, "pkg/__init__.py", "")
    write(src, "pkg/net.py", "class Net: ...\n")
    write(src, "const.yaml", "name: x\n")
    write(src, "assets/blob.bin", bytes(range(256)))
    dest = tmp_path / "out" / "workdir"
    unpack(pack(src), dest)
    got = {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    want = {p.relative_to(src).as_posix(): p.read_bytes() for p in src.rglob("*") if p.is_file()}
    assert got == want


def test_caches_vcs_and_envs_are_always_ignored(tmp_path: Path) -> None:
    write(tmp_path, "train.py")
    write(tmp_path, "__pycache__/train.cpython-311.pyc")
    write(tmp_path, "pkg/__pycache__/x.pyc")
    write(tmp_path, "stray.pyc")
    write(tmp_path, ".git/config")
    write(tmp_path, ".venv/bin/python")
    write(tmp_path, ".tox/py/x")
    assert packed_names(tmp_path) == {"train.py"}


def test_trialkitignore_patterns_and_negation(tmp_path: Path) -> None:
    write(tmp_path, ".trialkitignore", "# data stays out\n*.csv\n!keep.csv\n\n/top.txt\n")
    write(tmp_path, "train.py")
    write(tmp_path, "a.csv")
    write(tmp_path, "sub/b.csv")
    write(tmp_path, "keep.csv")
    write(tmp_path, "sub/keep.csv")
    write(tmp_path, "top.txt")
    write(tmp_path, "sub/top.txt")  # '/top.txt' is anchored to the root
    assert packed_names(tmp_path) == {
        ".trialkitignore",
        "train.py",
        "keep.csv",
        "sub/keep.csv",
        "sub/top.txt",
    }


def test_later_patterns_win(tmp_path: Path) -> None:
    write(tmp_path, ".trialkitignore", "!a.log\n*.log\n")
    write(tmp_path, "a.log")
    write(tmp_path, "b.txt")
    assert packed_names(tmp_path) == {".trialkitignore", "b.txt"}


def test_detignore_is_honoured_too(tmp_path: Path) -> None:
    write(tmp_path, ".detignore", "checkpoints\n")
    write(tmp_path, "train.py")
    write(tmp_path, "checkpoints/ckpt.pt", b"\0" * 10)
    write(tmp_path, "nested/checkpoints/other.pt")
    assert packed_names(tmp_path) == {".detignore", "train.py"}


def test_dir_only_patterns_skip_directories_but_not_files(tmp_path: Path) -> None:
    write(tmp_path, ".trialkitignore", "data/\n")
    write(tmp_path, "data/big.npy")
    write(tmp_path, "nested/data/more.npy")
    write(tmp_path, "other/data", "a file called data")
    assert packed_names(tmp_path) == {".trialkitignore", "other/data"}


def test_negation_of_a_dir_only_pattern(tmp_path: Path) -> None:
    write(tmp_path, ".trialkitignore", "out*/\n!outputs_keep/\n")
    write(tmp_path, "out1/a")
    write(tmp_path, "outputs_keep/b")
    assert packed_names(tmp_path) == {".trialkitignore", "outputs_keep/b"}


def test_star_does_not_cross_directories_in_a_path_pattern(tmp_path: Path) -> None:
    """gitignore: in 'docs/*.md' the '*' matches within one directory level only."""
    write(tmp_path, ".trialkitignore", "docs/*.md\n")
    write(tmp_path, "docs/a.md")
    write(tmp_path, "docs/api/b.md")
    assert packed_names(tmp_path) == {".trialkitignore", "docs/api/b.md"}


def test_oversized_directory_names_the_biggest_files(tmp_path: Path) -> None:
    write(tmp_path, "train.py", "x" * 10)
    write(tmp_path, "data/huge.bin", b"\0" * 3000)
    write(tmp_path, "data/big.bin", b"\0" * 2000)
    write(tmp_path, "mid.bin", b"\0" * 1000)
    write(tmp_path, "small.txt", "y" * 20)
    with pytest.raises(ModelDirError) as err:
        pack(tmp_path, limit=4000)
    msg = str(err.value)
    assert "data/huge.bin" in msg and "data/big.bin" in msg and "mid.bin" in msg
    assert msg.index("data/huge.bin") < msg.index("data/big.bin") < msg.index("mid.bin")
    assert "small.txt" not in msg and "train.py" not in msg
    assert ".trialkitignore" in msg  # tells the user how to fix it


def test_ignored_files_do_not_count_toward_the_limit(tmp_path: Path) -> None:
    write(tmp_path, ".trialkitignore", "*.bin\n")
    write(tmp_path, "train.py", "x" * 10)
    write(tmp_path, "huge.bin", b"\0" * 5000)
    assert packed_names(tmp_path, limit=1000) == {".trialkitignore", "train.py"}


def test_missing_directory_is_a_model_dir_error(tmp_path: Path) -> None:
    with pytest.raises(ModelDirError, match="does not exist"):
        pack(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ModelDirError):
        pack(tmp_path / "file")
    assert issubclass(ModelDirError, ValueError)


def test_unpack_refuses_paths_outside_the_destination(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"!"))
    with pytest.raises(ModelDirError, match="outside the destination"):
        unpack(buf.getvalue(), tmp_path / "dest")
    assert not (tmp_path / "escape.txt").exists()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("/etc/hostname", "symlink to the absolute path '/etc/hostname'"),
        ("../outside.txt", "outside the model directory"),
        ("missing.txt", "dangling symlink"),
    ],
)
def test_pack_refuses_links_that_would_not_resolve_inside_the_copy(
    tmp_path: Path, target: str, message: str
) -> None:
    write(tmp_path, "outside.txt")
    root = tmp_path / "model"
    write(root, "train.py")
    (root / "data").symlink_to(target)
    with pytest.raises(ModelDirError, match=message):
        pack(root)


def test_links_inside_the_model_directory_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "model"
    write(src, "pkg/real.txt", "contents")
    (src / "alias.txt").symlink_to("pkg/real.txt")
    (src / "pkg_alias").symlink_to("pkg")
    dest = tmp_path / "out"
    unpack(pack(src), dest)
    assert (dest / "alias.txt").is_symlink() and (dest / "alias.txt").read_text() == "contents"
    assert (dest / "pkg_alias").is_symlink() and (dest / "pkg_alias" / "real.txt").exists()


def _tar(*members: tarfile.TarInfo) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for m in members:
            tar.addfile(m)
    return buf.getvalue()


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


@pytest.mark.parametrize(
    "archive",
    [
        b"not a tarball",
        _tar(_link("data", "/etc/hostname")),
        _tar(_link("data", "../../outside")),
        _tar(_link("data", "/etc/hostname", tarfile.LNKTYPE)),
        _tar(tarfile.TarInfo("../escape.txt")),
    ],
    ids=["garbage", "absolute-symlink", "escaping-symlink", "hardlink", "dotdot"],
)
def test_unpack_refuses_archives_that_reach_outside_the_workdir(
    tmp_path: Path, archive: bytes
) -> None:
    dest = tmp_path / "a" / "workdir"
    with pytest.raises(ModelDirError, match="model definition cannot be unpacked"):
        unpack(archive, dest)
    assert not (tmp_path / "a" / "escape.txt").exists()
    assert not any(p.is_symlink() for p in dest.rglob("*"))
