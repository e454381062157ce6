"""The Core API profiler on a GPU node: each GPU's utilisation and free memory through NVML
(pynvml, from nvidia-ml-py: the device image has it), as Determined's ``gpu`` group."""

from __future__ import annotations

import time

import pytest

from tests.unit.core.test_core_contexts import MemoryMaster
from trialkit.core import DummyDistributedContext, ProfilerContext
from trialkit.core._metrics import MetricsShipper

pytestmark = pytest.mark.gpu


def test_the_profiler_reports_each_gpu_through_nvml(cuda: int) -> None:
    pytest.importorskip("pynvml", reason="NVML's Python module (nvidia-ml-py) is not installed")
    import torch

    master = MemoryMaster()
    shipper = MetricsShipper(master, interval=0.01)
    prof = ProfilerContext(shipper, DummyDistributedContext(), agent_id="gpu-node")
    x = torch.randn(2048, 2048, device="cuda")
    prof.on(sampling_interval=0.1, samples_per_report=2)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:  # keep the GPU busy while it samples
        x = torch.tanh(x @ x.T / 2048)
    torch.cuda.synchronize()
    prof.off()
    shipper.flush()
    shipper.close()
    gpu = [r for r in master.reports if r["group"] == "gpu"]
    assert gpu, {r["group"] for r in master.reports}
    per_gpu = gpu[0]["metrics"]["gpu-node"]
    assert len(per_gpu) == cuda, per_gpu  # every GPU of the node, by its uuid
    total = torch.cuda.get_device_properties(0).total_memory / 2**30
    for uuid, values in per_gpu.items():
        assert uuid.startswith("GPU-"), uuid
        assert 0.0 <= values["gpu_util"] <= 100.0
        assert 0.0 < values["gpu_free_memory"] <= total
    assert max(v["gpu_util"] for r in gpu for v in r["metrics"]["gpu-node"].values()) > 0.0
