"""Trial processes: spawn under the supervisor, watch, signal, and tail their logs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import psutil

_SUPERVISOR = str(Path(__file__).with_name("_supervise.py"))


@dataclass
class TrialProcess:
    """One run of a trial: the supervisor's process group, its exit file and log file."""

    trial_id: int
    experiment_id: int
    run_id: int
    pid: int
    started: float
    exit_file: Path
    log_file: Path
    log_offset: int = 0  # bytes of the log file already stored
    popen: subprocess.Popen[bytes] | None = None
    preempt_sent_at: float | None = None
    term_sent_at: float | None = None
    kill_sent: bool = False
    #: The run's last log lines, for the failure reason.
    recent_lines: deque[str] = field(default_factory=lambda: deque(maxlen=200))
    #: Set when the supervisor died without recording an exit code (it was killed).
    supervisor_lost: bool = False

    @classmethod
    def spawn(
        cls,
        *,
        trial_id: int,
        experiment_id: int,
        run_id: int,
        log_offset: int,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        exit_file: Path,
        log_file: Path,
    ) -> TrialProcess:
        exit_file.unlink(missing_ok=True)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        popen = subprocess.Popen(
            [sys.executable, _SUPERVISOR, str(exit_file), str(log_file), "--", *argv],
            cwd=cwd,
            env=env,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started = psutil.Process(popen.pid).create_time()
        return cls(
            trial_id,
            experiment_id,
            run_id,
            popen.pid,
            started,
            exit_file,
            log_file,
            log_offset,
            popen,
        )

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        try:
            proc = psutil.Process(self.pid)
            return (
                abs(proc.create_time() - self.started) < 0.01
                and proc.status() != psutil.STATUS_ZOMBIE
            )
        except psutil.Error:
            return False

    def exit_code(self) -> int:
        """The trial's exit code once the supervisor is gone (-9 if it was killed outright)."""
        try:
            return int(self.exit_file.read_text().strip())
        except (OSError, ValueError):
            self.supervisor_lost = True
            return -int(signal.SIGKILL)

    def signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def read_new_lines(self, offset: int, *, final: bool = False) -> tuple[list[str], int]:
        """Complete lines written since ``offset`` (all of them when ``final``), and the new offset."""
        try:
            with open(self.log_file, "rb") as f:
                f.seek(offset)
                data = f.read(4 * 2**20)
        except OSError:
            return [], offset
        if not data:
            return [], offset
        end = len(data) if final else data.rfind(b"\n") + 1
        chunk = data[:end]
        lines = chunk.decode("utf-8", errors="replace").splitlines()
        return lines, offset + end
