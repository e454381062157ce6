"""What a model directory cannot pack (issue 31, item 4): a symlink loop, a FIFO, a socket or a
device is refused by the one walk ``create`` and ``create --dry-run`` share, before anything is
packed, with one line naming it relative to the model directory and saying what to do."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from trialkit._modeldir import ModelDirError, pack


def _self_loop(root: Path) -> str:
    (root / "loop").symlink_to("loop")
    return "loop"


def _pair_loop(root: Path) -> str:
    (root / "pkg").mkdir()
    (root / "pkg" / "a").symlink_to("b")
    (root / "pkg" / "b").symlink_to("a")
    return "pkg/a"


def _fifo(root: Path) -> str:
    (root / "data").mkdir()
    os.mkfifo(root / "data" / "pipe")
    return "data/pipe"


def _socket(root: Path) -> str:
    sock = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    os.chdir(root)  # a relative name: tmp_path can be longer than a socket path may be
    try:
        sock.bind("agent.sock")
    finally:
        os.chdir(cwd)
        sock.close()  # the socket file stays
    return "agent.sock"


def _device(root: Path) -> str:
    try:
        os.mknod(root / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device file needs root")
    return "null"


KINDS: dict[str, tuple[Callable[[Path], str], str]] = {
    "self-loop": (_self_loop, "is a symlink loop"),
    "pair-loop": (_pair_loop, "is a symlink loop"),
    "fifo": (_fifo, "is a FIFO (named pipe)"),
    "socket": (_socket, "is a socket"),
    "device": (_device, "is a character device"),
}


def _model(tmp_path: Path, kind: str) -> tuple[Path, str]:
    root = tmp_path / "model"
    root.mkdir()
    (root / "train.py").write_text("print('hi')\n")
    return root, KINDS[kind][0](root)


@pytest.mark.parametrize("kind", KINDS)
def test_pack_refuses_it_in_one_line_naming_it(tmp_path: Path, kind: str) -> None:
    root, rel = _model(tmp_path, kind)
    with pytest.raises(ModelDirError) as caught:
        pack(root)
    message = str(caught.value)
    assert message.startswith(f"model directory: {rel!r} {KINDS[kind][1]}"), message
    assert "add it to .trialkitignore" in message and "\n" not in message


@pytest.mark.parametrize("kind", KINDS)
def test_listed_in_trialkitignore_it_is_left_out(tmp_path: Path, kind: str) -> None:
    root, rel = _model(tmp_path, kind)
    (root / ".trialkitignore").write_text(f"/{rel.split('/')[0]}\n")  # a loop's pair too
    assert pack(root)


def test_create_and_dry_run_give_the_same_line(tmp_path: Path) -> None:
    root, rel = _model(tmp_path, "self-loop")
    os.mkfifo(root / "pipe")
    (root / ".trialkitignore").write_text("/pipe\n")  # ignored: only the loop is named
    cfg = tmp_path / "config.json"
    searcher = {"name": "single", "metric": "x", "max_length": {"batches": 1}}
    cfg.write_text(json.dumps({"entrypoint": "python3 train.py", "searcher": searcher}))
    env = {**os.environ, "TRIALKIT_HOME": str(tmp_path / "home")}
    outs = []
    for flags in (["--dry-run"], []):
        cmd = [sys.executable, "-m", "trialkit.cli", "e", "create", *flags, str(cfg), str(root)]
        outs.append(subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60))
    for out in outs:
        assert out.returncode != 0 and out.stdout == "", out
        assert out.stderr.splitlines() == [
            f"trialkit: error: model directory: {rel!r} is a symlink loop (to 'loop'); "
            "remove or fix it, or add it to .trialkitignore"
        ], out.stderr
    assert not (tmp_path / "home" / "master.json").exists()  # refused before any master
