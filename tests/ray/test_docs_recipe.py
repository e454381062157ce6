"""docs/ray.md's "Try it on one machine" runs as written: its blocks marked ``test: ray`` start
three Ray nodes on 127.0.0.2-4, a master joins them (``master status`` and the master log show
the pool), and the stop block leaves no Ray process of the recipe behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from tests.docs.blocks import REPO, blocks
from tests.ray.conftest import RAY_ENV

pytestmark = pytest.mark.integration

#: The directory the recipe keeps its nodes' temp dirs, logs and pid files in.
RECIPE_DIR = "/tmp/ray-demo"


def _recipe_processes() -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if any(RECIPE_DIR in part for part in p.info["cmdline"] or []):
                found.append(p)
    return found


def _run_block(text: str, work: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(
        ["bash", "-e", "-c", text],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        start_new_session=True,
    )
    out = f"{proc.stdout}\n{proc.stderr}"
    assert proc.returncode == 0, f"{text}\nexited {proc.returncode}:\n{out}"
    return out


def test_the_one_machine_recipe_starts_joins_and_stops(tmp_path: Path) -> None:
    if Path(RECIPE_DIR).exists() or _recipe_processes():
        pytest.skip(f"{RECIPE_DIR} is in use (a reader's cluster from docs/ray.md?)")
    page = blocks("ray.md")
    recipe = [b for b in page if "ray" in b.flags]
    assert [b.lang for b in recipe] == ["bash", "bash", "bash"], [b.where for b in recipe]
    start, status, stop = recipe
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    for block in page:
        if block.file:
            (work / block.file).write_text(block.text)
    bin_dir = str(Path(sys.executable).parent)  # ray and trialkit, as on a reader's PATH
    env = {
        **os.environ,
        **RAY_ENV,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO / "src"),
        "TRIALKIT_HOME": str(home),
    }
    env.pop("RAY_memory_monitor_refresh_ms")  # the recipe sets it
    try:
        began = time.monotonic()
        _run_block(start.text, work, env)
        started = time.monotonic() - began
        shown = _run_block(status.text, work, env)
        assert "  pools    local: " in shown and " CPU slots on this machine\n" in shown, shown
        assert "ray: Ray cluster at 127.0.0.2:6390, 3 nodes, 2 CPU slots" in shown, shown
        as_json = subprocess.run(
            [sys.executable, "-m", "trialkit.cli", "master", "status", "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        pools = {p["name"]: p for p in json.loads(as_json)["pools"]}
        assert pools["ray"] == {
            "name": "ray",
            "type": "ray",
            "slot_type": "cpu",
            "slots": 2,
            "address": "127.0.0.2:6390",
            "nodes": 3,
        }, pools
        log = (home / "master.log").read_text()
        assert "joined the Ray cluster at 127.0.0.2:6390 (3 nodes, 2 CPU slots)" in log, log
        began = time.monotonic()
        _run_block(stop.text, work, env)
        stopped = time.monotonic() - began
        left = _recipe_processes()
        assert not left, [p.info["cmdline"] for p in left]
        assert not Path(RECIPE_DIR).exists()
        print(f"recipe: cluster up in {started:.1f}s, master and nodes stopped in {stopped:.1f}s")
    finally:
        subprocess.run(
            [sys.executable, "-m", "trialkit.cli", "master", "down"], env=env, capture_output=True
        )
        for p in _recipe_processes():  # what a failed recipe left
            with contextlib.suppress(psutil.Error):
                p.kill()
        shutil.rmtree(RECIPE_DIR, ignore_errors=True)
