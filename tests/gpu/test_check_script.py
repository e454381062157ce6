"""scripts/gpu_check.sh's CPU path, as CI runs it: without CUDA every GPU test is skipped with its
reason, the benchmarks are skipped saying why, the JUnit XML and summary land in a temp dir
(OUT unset), and it exits 0."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .conftest import REPO, cuda_count

pytestmark = pytest.mark.integration


@pytest.mark.skipif(cuda_count() > 0, reason="this machine has CUDA: the script runs for real")
def test_without_cuda_it_skips_everything_saying_why_and_exits_0() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OUT", "PYTHONPATH")}
    env["PYTHON"] = sys.executable
    p = subprocess.run(
        ["bash", str(REPO / "scripts" / "gpu_check.sh")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    out = Path(p.stdout.strip().splitlines()[-1].rsplit("files in ", 1)[1])
    try:
        summary = (out / "summary.txt").read_text()
        assert "no CUDA" in summary and "benchmarks skipped: no CUDA" in summary
        suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
        assert suite is not None
        tests, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
        assert tests > 0 and skipped == tests, (tests, skipped)
        assert int(suite.get("failures", 0)) == int(suite.get("errors", 0)) == 0
        # Every skip is listed with its reason.
        reasons = [line for line in summary.splitlines() if line.startswith("  SKIPPED ")]
        assert reasons and all(": " in r.split("tests/gpu/", 1)[1] for r in reasons), reasons
        assert (out / "pytest.log").exists() and "done in" in summary
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_a_python_that_cannot_run_the_tests_is_one_line_saying_why_and_exit_1(
    tmp_path: Path,
) -> None:
    """A PYTHON without trialkit's dependencies (here: the tests' imports fail) ends with the
    import error in the summary, not a blank count, and a failing exit status."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["OUT"] = str(tmp_path)
    # -S: no site-packages at all, so not even pytest imports
    wrapper = tmp_path / "bare-python"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    env["PYTHON"] = str(wrapper)
    p = subprocess.run(
        ["bash", str(REPO / "scripts" / "gpu_check.sh")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 1, p.stdout + p.stderr
    (line,) = [x for x in (tmp_path / "summary.txt").read_text().splitlines() if "tests (rc" in x]
    assert "no tests ran: " in line and "No module named" in line, line


@pytest.mark.skipif(cuda_count() > 0, reason="this machine has CUDA: the script runs for real")
def test_gpu_check_tests_reruns_only_the_tests_asked_for(tmp_path: Path) -> None:
    """GPU_CHECK_TESTS narrows the run to what failed last time (`none`: no test at all)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(PYTHON=sys.executable, OUT=str(tmp_path / "one"))
    env["GPU_CHECK_TESTS"] = "tests/gpu/test_pytorch.py"
    script = ["bash", str(REPO / "scripts" / "gpu_check.sh")]
    p = subprocess.run(script, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    # a module that skips whole (no torch) is one case named after the module, with no class
    cases = list(ET.parse(tmp_path / "one" / "junit.xml").getroot().iter("testcase"))
    where = {c.get("classname") or c.get("name") for c in cases}
    assert where == {"tests.gpu.test_pytorch"}, where
    env.update(OUT=str(tmp_path / "none"), GPU_CHECK_TESTS="none")
    p = subprocess.run(script, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    summary = (tmp_path / "none" / "summary.txt").read_text()
    assert "tests: none asked for" in summary and not (tmp_path / "none" / "junit.xml").exists()
