"""tests/gpu: every test takes the ``device`` fixture, which skips with the reason when CUDA is
absent. TRIALKIT_GPU_TESTS_ON_CPU=1 runs the tests whose logic holds on CPU there instead (a dry
run of the logic before a GPU session; the tests that need CUDA itself take ``cuda`` and skip).
The real-master fixtures come from the integration suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# cuBLAS needs this before its first use for torch.use_deterministic_algorithms(True).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

from tests.integration.conftest import master  # noqa: E402, F401  (a real master, 2 slots or the GPUs)

REPO = Path(__file__).resolve().parents[2]
ON_CPU = os.environ.get("TRIALKIT_GPU_TESTS_ON_CPU") == "1"
NO_CUDA = "CUDA is not available (torch.cuda.is_available() is False): a GPU test"


def cuda_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.fixture
def device() -> str:
    """'cuda', or 'cpu' on a dry run (TRIALKIT_GPU_TESTS_ON_CPU=1); else the test skips."""
    pytest.importorskip("torch")
    if cuda_count():
        return "cuda"
    if ON_CPU:
        return "cpu"
    pytest.skip(NO_CUDA)


@pytest.fixture
def cuda() -> int:
    """The number of GPUs; the test skips without CUDA, dry run or not (it needs CUDA itself)."""
    pytest.importorskip("torch")
    n = cuda_count()
    if not n:
        pytest.skip(NO_CUDA + " that needs CUDA itself")
    return n


@pytest.fixture
def deterministic() -> object:
    """torch.use_deterministic_algorithms(True) for the test (bitwise-equal resumes on CUDA)."""
    import torch

    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    cudnn = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = False
    yield None
    torch.use_deterministic_algorithms(before)
    torch.backends.cudnn.benchmark = cudnn


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a subprocess: the repository root (``tests.*``), the directory this
    process imported trialkit from (the device's --target site, or src/), then PYTHONPATH."""
    import trialkit

    parts = [str(REPO), str(Path(trialkit.__file__).resolve().parents[1])]
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(parts), **extra}
