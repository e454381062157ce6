"""ProfilerContext: samples system metrics (cpu, memory, disk, network; each GPU's utilisation
and free memory through NVML where ``pynvml`` and a driver are present) in the background and
reports their averages as metric groups; while on, the Trial harnesses' loop reports its
timings (data loading, training step) per reporting period through it as group ``timings``."""

from __future__ import annotations

import threading
import time
from typing import Any

from ._distributed import DistributedContext
from ._metrics import MetricsShipper

#: The metric group of the harness's timings.
TIMINGS = "timings"


def _sample() -> dict[str, dict[str, float]]:
    import psutil

    disk = psutil.disk_io_counters()
    net = psutil.net_io_counters()
    return {
        "cpu": {"cpu_util_simple": psutil.cpu_percent(interval=None)},
        "memory": {"memory_free": psutil.virtual_memory().available / 2**30},
        "disk": {
            "disk_read_bytes": float(disk.read_bytes if disk else 0),
            "disk_write_bytes": float(disk.write_bytes if disk else 0),
        },
        "network": {
            "net_sent_bytes": float(net.bytes_sent),
            "net_recv_bytes": float(net.bytes_recv),
        },
    }


class _Gpus:
    """This node's GPUs through NVML (``pynvml``, from nvidia-ml-py): ``open()`` is None where
    the module, the driver or a GPU is missing, and the profiler then reports no ``gpu`` group."""

    def __init__(self, nvml: Any, handles: list[tuple[str, Any]]) -> None:
        self._nvml = nvml
        self._handles = handles  # (uuid, handle)

    @classmethod
    def open(cls) -> _Gpus | None:
        try:
            import pynvml

            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            named = [(_text(pynvml.nvmlDeviceGetUUID(h)), h) for h in handles]
        except Exception:  # no module, no driver (NVMLError), no device
            return None
        return cls(pynvml, named) if named else None

    def sample(self) -> dict[str, dict[str, float]]:
        """Per GPU uuid: utilisation (%) and free memory (GiB, as ``memory_free``)."""
        nvml = self._nvml
        return {
            uuid: {
                "gpu_util": float(nvml.nvmlDeviceGetUtilizationRates(h).gpu),
                "gpu_free_memory": nvml.nvmlDeviceGetMemoryInfo(h).free / 2**30,
            }
            for uuid, h in self._handles
        }


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value  # bytes from older pynvml


def _mean(samples: list[dict[str, float]]) -> dict[str, float]:
    """Each value's mean over a report window's samples."""
    return {name: sum(s[name] for s in samples) / len(samples) for name in samples[0]}


def average_gpus(samples: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """The mean of each GPU's values over a report window (Determined's ``gpu`` group: one
    level of nesting per GPU uuid)."""
    return {uuid: _mean([s[uuid] for s in samples]) for uuid in samples[0]}


def _throughput(
    first: dict[str, float], last: dict[str, float], seconds: float
) -> dict[str, float]:
    """Counters become rates between the first and last sample of a report window."""
    return {
        k.replace("_bytes", "_throughput"): (last[k] - first[k]) / max(seconds, 1e-9) for k in last
    }


class _Sampler(threading.Thread):
    def __init__(
        self, shipper: MetricsShipper, agent_id: str, interval: float, per_report: int
    ) -> None:
        super().__init__(name="trialkit-profiler", daemon=True)
        self._shipper = shipper
        self._agent_id = agent_id
        self._interval = interval
        self._per_report = per_report
        self._stop_event = threading.Event()
        self.reports = 0

    def run(self) -> None:
        gpus = _Gpus.open()
        window: list[tuple[float, dict[str, dict[str, float]]]] = []
        gpu_window: list[dict[str, dict[str, float]]] = []
        while not self._stop_event.wait(self._interval):
            window.append((time.monotonic(), _sample()))
            if gpus is not None:
                gpu_window.append(gpus.sample())
            if len(window) >= self._per_report:
                self._report(window, gpu_window)
                window, gpu_window = [], []

    def _report(
        self,
        window: list[tuple[float, dict[str, dict[str, float]]]],
        gpu_window: list[dict[str, dict[str, float]]],
    ) -> None:
        seconds = window[-1][0] - window[0][0]
        first, last = window[0][1], window[-1][1]
        groups: dict[str, dict[str, Any]] = {
            "cpu": _mean([s["cpu"] for _, s in window]),
            "memory": _mean([s["memory"] for _, s in window]),
            "disk": _throughput(first["disk"], last["disk"], seconds),
            "network": _throughput(first["network"], last["network"], seconds),
        }
        if gpu_window:
            groups["gpu"] = average_gpus(gpu_window)
        self.reports += 1
        for group, values in groups.items():
            self._shipper.put(
                {
                    "group": group,
                    "steps_completed": self.reports,
                    "metrics": {self._agent_id: values},
                }
            )

    def stop(self) -> None:
        self._stop_event.set()


class ProfilerContext:
    """``on()`` starts sampling system metrics on the node's first worker; ``off()`` stops."""

    def __init__(
        self, shipper: MetricsShipper, dist: DistributedContext, agent_id: str = "localhost"
    ) -> None:
        self._shipper = shipper
        self._dist = dist
        self._agent_id = agent_id
        self._sampler: _Sampler | None = None

    def on(self, sampling_interval: float = 1, samples_per_report: int = 10) -> None:
        """Start sampling every ``sampling_interval`` s, reporting every ``samples_per_report``."""
        if sampling_interval < 0.1:
            raise ValueError(f"sampling_interval must be >= 0.1 s, got {sampling_interval}")
        if samples_per_report < 1:
            raise ValueError(f"samples_per_report must be >= 1, got {samples_per_report}")
        if self._sampler is not None or self._dist.local_rank != 0:
            return
        self._sampler = _Sampler(
            self._shipper, self._agent_id, sampling_interval, samples_per_report
        )
        self._sampler.start()

    @property
    def is_on(self) -> bool:
        """Whether this worker samples: ``on()`` was called here, on the node's first worker."""
        return self._sampler is not None

    def report_timings(self, steps_completed: int, seconds: dict[str, float]) -> None:
        """Report seconds spent per activity (e.g. ``dataloader_next``, ``train_batch``) since
        the last report, as group ``timings`` of this agent (the profiler tab draws them)."""
        self._shipper.put(
            {
                "group": TIMINGS,
                "steps_completed": steps_completed,
                "metrics": {self._agent_id: dict(seconds)},
            }
        )

    def off(self) -> None:
        """Stop sampling (idempotent)."""
        if self._sampler is not None:
            self._sampler.stop()
            self._sampler.join()
            self._sampler = None
