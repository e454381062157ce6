"""Launchers: wrap_rank run for real; torch_distributed / deepspeed / horovod command lines and
their one-line errors (no torch, deepspeed or horovod needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import paths
from trialkit.launch import deepspeed, horovod, torch_distributed, wrap_rank
from trialkit.launch._common import LaunchError

SRC = str(paths.SRC)


def _launch(
    module: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", f"trialkit.launch.{module}", *args],
        env={**os.environ, "PYTHONPATH": SRC, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.integration
def test_wrap_rank_prefixes_every_line_and_keeps_the_exit_code() -> None:
    p = _launch(
        "wrap_rank",
        "3",
        "--",
        sys.executable,
        "-c",
        "import sys; print('a'); sys.stdout.write('b\\rc\\n'); print('err', file=sys.stderr); "
        "sys.stdout.write('tail'); sys.exit(4)",
    )
    assert p.returncode == 4
    assert p.stdout.splitlines() == [
        "[rank=3] || a",
        "[rank=3] || b",
        "[rank=3] || c",
        "[rank=3] || tail",
    ]
    assert p.stderr.splitlines() == ["[rank=3] || err"]


@pytest.mark.integration
def test_wrap_rank_reads_the_rank_from_env_names_in_order() -> None:
    p = _launch("wrap_rank", "NOPE,PMI_RANK", "echo", "hi", env={"PMI_RANK": "7"})
    assert (p.returncode, p.stdout) == (0, "[rank=7] || hi\n")
    p = _launch("wrap_rank", "NOPE_A,NOPE_B", "echo", "hi")
    assert p.returncode == 1
    assert p.stderr.strip().startswith("error: rank 'NOPE_A,NOPE_B': none of these")
    assert "Traceback" not in p.stderr


@pytest.mark.integration
def test_wrap_rank_no_redirect_and_missing_program() -> None:
    p = _launch("wrap_rank", "--no-redirect-stdio", "0", "echo", "plain")
    assert p.stdout == "plain\n"
    p = _launch("wrap_rank", "0", "/no/such/program")
    assert p.returncode == 1 and "error: cannot start '/no/such/program'" in p.stderr


@pytest.mark.parametrize("module", [torch_distributed, deepspeed, horovod, wrap_rank])
def test_every_launcher_has_help(module: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        module.main(["--help"])
    assert e.value.code == 0 and "usage: python3 -m trialkit.launch." in capsys.readouterr().out


def test_resolve_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "2")
    assert wrap_rank.resolve_rank("5") == 5
    assert wrap_rank.resolve_rank("RANK") == 2
    with pytest.raises(LaunchError):
        wrap_rank.resolve_rank("NOT_SET_ANYWHERE")


def test_torch_distributed_single_node_command() -> None:
    cmd = torch_distributed.build_command(
        nnodes=1,
        nproc_per_node=2,
        node_rank=0,
        master_addr="127.0.0.1",
        master_port=None,
        torchrun_args=["--log-dir", "/tmp/x"],
        worker=["python3", "train.py", "--lr", "0.1"],
    )
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    i = cmd.index("--no-python")
    assert cmd[3:i] == [
        "--max-restarts",
        "0",
        "--standalone",
        "--nnodes",
        "1",
        "--nproc-per-node",
        "2",
        "--log-dir",
        "/tmp/x",
    ]
    assert cmd[i + 1 :] == [
        sys.executable,
        "-m",
        "trialkit.launch.wrap_rank",
        "RANK",
        "--",
        "python3",
        "train.py",
        "--lr",
        "0.1",
    ]


def test_torch_distributed_multi_node_command() -> None:
    cmd = torch_distributed.build_command(
        nnodes=2,
        nproc_per_node=1,
        node_rank=1,
        master_addr="10.0.0.1",
        master_port=29500,
        torchrun_args=[],
        worker=["python3", "t.py"],
    )
    joined = " ".join(cmd)
    assert "--nnodes 2 --node-rank 1 --master-addr 10.0.0.1 --master-port 29500" in joined
    assert "--standalone" not in cmd


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "no script to run"),
        (["--trial", "model_def:T", "python3", "x.py"], "takes no script arguments"),
        (["--nnodes", "2", "python3", "x.py"], "give --rdzv-endpoint HOST:PORT"),
        (["--rdzv-endpoint", "nohost", "--", "python3", "x.py"], "expected HOST:PORT"),
        (
            ["--nnodes", "2", "--rdzv-endpoint", "10.0.0.1:29400", "--", "python3", "x.py"],
            "set TRIALKIT_DIST_TOKEN to the same secret on every node",
        ),
    ],
)
def test_torch_distributed_bad_input_is_a_launch_error(
    args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRIALKIT_DIST_TOKEN", raising=False)
    with pytest.raises(LaunchError, match=message):
        torch_distributed.main(args)


@pytest.mark.integration
def test_bad_input_is_one_line_on_stderr() -> None:
    p = _launch("torch_distributed", "--nnodes", "2", "python3", "x.py")
    assert p.returncode == 1
    assert (
        p.stderr.startswith("error: --nnodes 2: give --rdzv-endpoint")
        and "Traceback" not in p.stderr
    )


def test_deepspeed_command_and_hostfile(tmp_path: Path) -> None:
    cmd = deepspeed.build_command(
        master_addr="localhost",
        master_port=1234,
        nproc_per_node=2,
        hostfile=None,
        ds_args=[],
        worker=["python3", "t.py"],
    )
    assert cmd[:5] == ["deepspeed", "--num_nodes", "1", "--num_gpus", "2"]
    assert "--no_python" in cmd and "--no_local_rank" in cmd
    assert cmd[-5:] == ["trialkit.launch.wrap_rank", "RANK", "--", "python3", "t.py"]
    hf = deepspeed.write_hostfile(["10.0.0.1", "10.0.0.2"], 4, tmp_path / "h")
    assert hf.read_text() == "10.0.0.1 slots=4\n10.0.0.2 slots=4\n"
    multi = deepspeed.build_command(
        master_addr="10.0.0.1",
        master_port=1,
        nproc_per_node=4,
        hostfile=str(hf),
        ds_args=[],
        worker=["x"],
    )
    assert multi[:3] == ["deepspeed", "-H", str(hf)]


def test_horovod_command() -> None:
    cmd = horovod.build_command(
        addrs=["10.0.0.1", "10.0.0.2"],
        nproc_per_node=2,
        network_interface="lo",
        hvd_args=["--verbose"],
        worker=["python3", "t.py"],
    )
    assert cmd[:5] == ["horovodrun", "-np", "4", "-H", "localhost:2,10.0.0.2:2"]
    assert ["--network-interface", "lo"] == cmd[cmd.index("--network-interface") :][:2]
    assert "--verbose" in cmd
    tail = cmd[cmd.index("trialkit.launch.wrap_rank") :]
    assert tail == ["trialkit.launch.wrap_rank", horovod.RANK_VARS, "--", "python3", "t.py"]


def test_horovodrun_of_this_python_comes_before_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A venv's python run by its path (venv not activated) finds the venv's horovodrun."""
    venv, other = tmp_path / "venv" / "bin", tmp_path / "other"
    for d in (venv, other):
        d.mkdir(parents=True)
        (d / "horovodrun").write_text("#!/bin/sh\n")
        (d / "horovodrun").chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(venv / "python"))
    monkeypatch.setenv("PATH", str(other))
    assert horovod.find_horovodrun() == str(venv / "horovodrun")
    (venv / "horovodrun").chmod(0o644)  # not executable: fall back to PATH
    assert horovod.find_horovodrun() == str(other / "horovodrun")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert horovod.find_horovodrun() is None


def test_missing_frameworks_say_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no horovodrun / deepspeed on PATH
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))  # nor next to python
    monkeypatch.delenv("TRIALKIT_CLUSTER_INFO", raising=False)
    with pytest.raises(LaunchError, match="^horovod is not installed"):
        horovod.main(["--nproc-per-node", "2", "python3", "t.py"])
    assert horovod.main(["--dry-run", "--nproc-per-node", "2", "python3", "t.py"]) == 0
    assert capsys.readouterr().out.startswith("horovodrun -np 2 -H localhost:2")
    with pytest.raises(LaunchError, match="^deepspeed is not installed"):
        deepspeed.main(["python3", "t.py"])


@pytest.mark.parametrize("gpu", [True, False])
def test_deepspeed_workers_get_the_cpu_accelerator_only_where_torch_sees_no_gpu(
    monkeypatch: pytest.MonkeyPatch, gpu: bool
) -> None:
    # Seen on the H200 check: with CUDA_VISIBLE_DEVICES unset (as on most GPU machines) the
    # launcher told DeepSpeed to train on the CPU.
    import importlib.util
    import types

    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: gpu))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    # deepspeed "installed" for the launcher's check; torch too, as the old launcher asked
    # find_spec("torch") (so this test fails on it in an env without torch as well)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name in ("torch", "deepspeed") else real_find_spec(name, *a),
    )
    monkeypatch.setattr(deepspeed.shutil, "which", lambda name: f"/bin/{name}")
    for name in ("CUDA_VISIBLE_DEVICES", "DS_ACCELERATOR", "TRIALKIT_CLUSTER_INFO"):
        monkeypatch.delenv(name, raising=False)
    seen: dict[str, str] = {}

    def supervise(cmd: list[str], env: dict[str, str], *args: Any, **kw: Any) -> int:
        seen.update(env)
        return 0

    monkeypatch.setattr(deepspeed, "supervise", supervise)
    assert deepspeed.main(["--nproc-per-node", "1", "python3", "t.py"]) == 0
    assert seen.get("DS_ACCELERATOR") == (None if gpu else "cpu")
    monkeypatch.setenv("DS_ACCELERATOR", "cuda")  # a choice the user made is kept
    seen.clear()
    deepspeed.main(["--nproc-per-node", "1", "python3", "t.py"])
    assert seen["DS_ACCELERATOR"] == "cuda"
