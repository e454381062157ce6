"""The part of a Ray run that runs on a Ray node (inside an actor): unpack the model directory
there, start the trial's command under the same supervisor a local run uses, hand back its log
and exit code, and pass signals on. Imports nothing of Ray or trialkit's master at module level
(the master imports this module to name the actor class)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from ._processes import _SUPERVISOR

_JANITOR = str(Path(__file__).with_name("_ray_janitor.py"))

#: The most log bytes handed back in one call.
LOG_READ = 1 * 2**20
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child (preexec_fn): SIGKILL when the actor's thread that started it goes."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def relocate(value: str, old: str, new: str) -> str:
    """``value`` with the master's trial directory ``old`` replaced by the node's ``new``."""
    return value.replace(old, new)


class NodeRunner:
    """One bundle of a run: its working directory on the node and its supervised process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._pending: int | None = None  # a signal that came before the process started
        self._dir: Path | None = None

    def run(
        self,
        files: dict[str, tuple[bytes, int]],
        model_def: bytes | None,
        master_dir: str,
        argv: list[str],
        env: dict[str, str],
    ) -> int:
        """Recreate the run's directory here, run ``argv`` in its model copy; its exit code."""
        from ... import _modeldir

        d = Path(tempfile.mkdtemp(prefix="trialkit-run-"))
        self._dir = d
        _watch_over(d)
        for rel, (data, mode) in files.items():
            path = d / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(mode)
        workdir = d / "model"
        if model_def:
            _modeldir.unpack(model_def, workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        argv = [relocate(a, master_dir, str(d)) for a in argv]
        env = {k: relocate(v, master_dir, str(d)) for k, v in env.items()}
        env.update(_gpu_env())
        exit_file, log_file = d / "run.exit", d / "output.log"
        with self._lock:
            if self._pending is not None:
                return -self._pending
            self._proc = subprocess.Popen(
                [sys.executable, _SUPERVISOR, str(exit_file), str(log_file), "--", *argv],
                cwd=workdir,
                env=env,
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=die_with_parent,  # the actor gone (node lost): the run goes too
            )
        self._proc.wait()
        try:
            return int(exit_file.read_text().strip())
        except (OSError, ValueError):
            return -int(signal.SIGKILL)

    def rendezvous_ports(self) -> tuple[str, list[int]]:
        """(this node's Ray id, two ports free on it): the chief's rendezvous and DistributedContext
        ports, chosen on the node that binds them."""
        import ray

        from ...rendezvous import free_ports

        return ray.get_runtime_context().get_node_id(), free_ports(2)

    def read_log(self, offset: int) -> bytes:
        """Up to LOG_READ bytes of the run's output from ``offset``."""
        if self._dir is None:
            return b""
        try:
            with open(self._dir / "output.log", "rb") as f:
                f.seek(offset)
                return f.read(LOG_READ)
        except OSError:
            return b""

    def signal(self, sig: int) -> None:
        """Signal the run's process group (the supervisor passes SIGTERM on by ignoring it)."""
        with self._lock:
            if self._proc is None:
                self._pending = sig
                return
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, sig)

    def cleanup(self) -> None:
        """Remove the run's directory (its checkpoints are in shared storage); the master
        waits for this before it removes the placement group, which ends the actor."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)


def _watch_over(directory: Path) -> None:
    """Have a detached janitor remove ``directory`` once this actor's process is gone, should
    it go without its cleanup (the master stopped, the actor killed)."""
    subprocess.run(
        [sys.executable, _JANITOR, str(os.getpid()), str(directory)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        check=False,
    )


def _gpu_env() -> dict[str, str]:
    """CUDA_VISIBLE_DEVICES for the GPUs Ray gave this actor (none for CPU slots)."""
    import ray

    ids = ray.get_gpu_ids()
    return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, ids))} if ids else {}
