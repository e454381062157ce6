"""Trial processes: spawn under the supervisor, watch, signal, and tail their logs.

A run is the supervisor's process group (the supervisor leads a new session; the stored pid is
its pid, which is also the group id) plus every process carrying the run's tag in its
environment (TRIALKIT_TRIAL_RUN, inherited by everything the trial starts, even after setsid).
A run is over only when the supervisor is gone and so is every process of the run: when the
supervisor dies first (killed), the master kills what is left before anything is relaunched."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import psutil

_SUPERVISOR = str(Path(__file__).with_name("_trial_supervisor.py"))
#: Environment variable naming the run a process belongs to (inherited by its descendants).
RUN_TAG_ENV = "TRIALKIT_TRIAL_RUN"
#: The most bytes of a log read in one go (one tick); a long log is drained over several.
LOG_CHUNK = 4 * 2**20


def _tag_of(p: psutil.Process) -> str | None:
    try:
        return p.environ().get(RUN_TAG_ENV)
    except psutil.Error:  # a zombie's environment is gone (its group still says whose it is);
        return None  # a kernel thread has none


@dataclass(frozen=True)
class ProcessEntry:
    """One process of this machine, as a scan found it."""

    process: psutil.Process
    group: int
    created: float
    zombie: bool
    tag: str | None


class ProcessTable:
    """Scans of this machine's processes: each one's group, start time and run tag.

    A tag is read once per process (from /proc/PID/environ, the costly part) and remembered:
    when 200 trials ended together, a scan per run reading every environment held the GIL for
    ~15 s, and the metric stream's latency with it."""

    def __init__(self) -> None:
        self._tags: dict[tuple[int, float], str | None] = {}

    def scan(self) -> list[ProcessEntry]:
        me, found, tags = os.getpid(), [], {}
        for p in psutil.process_iter(["pid"]):
            if p.pid == me:
                continue
            with contextlib.suppress(psutil.Error, OSError), p.oneshot():
                zombie = p.status() == psutil.STATUS_ZOMBIE
                if zombie and p.ppid() == me:  # e.g. an adopted supervisor started here
                    os.waitpid(p.pid, os.WNOHANG)
                    continue
                key = (p.pid, p.create_time())
                tags[key] = self._tags[key] if key in self._tags else _tag_of(p)
                found.append(ProcessEntry(p, os.getpgid(p.pid), key[1], zombie, tags[key]))
        self._tags = tags  # forget the processes that are gone
        return found


#: The master's process table (one per process: the tags it remembers are this machine's).
PROCESSES = ProcessTable()


def run_tag(home: Path, trial_id: int, run_id: int) -> str:
    """The tag of one run of a trial of the master at ``home`` (unique on this machine)."""
    return f"{home}:{trial_id}:{run_id}"


@dataclass
class TrialProcess:
    """One run of a trial: the supervisor's process group, its exit file and log file.
    ``pid`` is None for a run with no process on this machine (one on a Ray node)."""

    trial_id: int
    experiment_id: int
    run_id: int
    pid: int | None
    started: float
    exit_file: Path
    log_file: Path
    tag: str
    log_offset: int = 0  # bytes of the log file already stored
    popen: subprocess.Popen[bytes] | None = None
    #: Set once the run is over (supervisor and all its processes gone); its log may still
    #: be draining.
    ended: bool = False
    #: The run's last log lines, for the failure reason.
    recent_lines: deque[str] = field(default_factory=lambda: deque(maxlen=200))
    #: Set when the supervisor died without recording an exit code (it was killed).
    supervisor_lost: bool = False
    #: Why the run failed, when the master itself knows (it wins over the log's last lines).
    failure: str | None = None

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
        tag: str,
    ) -> TrialProcess:
        exit_file.unlink(missing_ok=True)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        popen = subprocess.Popen(
            [sys.executable, _SUPERVISOR, str(exit_file), str(log_file), "--", *argv],
            cwd=cwd,
            env={**env, RUN_TAG_ENV: tag},
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
            tag,
            log_offset,
            popen,
        )

    def finished(self, scan: list[ProcessEntry] | None = None) -> bool:
        """Whether the run is over. A supervisor that died before the run's processes (it was
        killed) leaves them unsupervised: they are killed here, and the run is over once they
        are gone (zombies reaped too), so a relaunch never runs beside them. ``scan``: this
        machine's processes, if already scanned."""
        if self.alive():
            return False
        if self.pid is None:
            return True  # nothing of it runs here
        left = self.leftovers(zombies=True, scan=scan)
        for p in left:
            with contextlib.suppress(psutil.Error):
                p.kill()
        return not left

    def leftovers(
        self, *, zombies: bool = False, scan: list[ProcessEntry] | None = None
    ) -> list[psutil.Process]:
        """Processes of this run: its process group, and anything carrying its tag."""
        return [
            e.process
            for e in (PROCESSES.scan() if scan is None else scan)
            if (zombies or not e.zombie) and (self._in_group(e) or e.tag == self.tag)
        ]

    def _in_group(self, e: ProcessEntry) -> bool:
        # A group id outlives its leader; the create time rules out a reused id.
        return e.group == self.pid and e.created >= self.started - 0.01

    def alive(self) -> bool:
        """Whether the supervisor is still running."""
        if self.popen is not None:
            return self.popen.poll() is None
        if self.pid is None:
            return False
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
        """Signal the run: its process group and the processes that left it (setsid)."""
        if self.pid is None:
            return  # no process here to signal
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for p in self.leftovers():
            # Any of them may exit meanwhile: getpgid then raises ProcessLookupError.
            with contextlib.suppress(psutil.Error, OSError):
                if os.getpgid(p.pid) != self.pid:
                    p.send_signal(sig)

    def read_chunk(self, offset: int, *, final: bool = False) -> tuple[list[str], int, bool]:
        """At most LOG_CHUNK bytes of complete lines from ``offset``: (lines, new offset,
        whether the end of the file was reached). With ``final`` (the run is over) a last line
        without its newline counts too; a line longer than a chunk is split."""
        try:
            # A stat first: the engine looks at every run's log ten times a second, and most
            # looks find nothing new (an open, seek and read cost more: bench/README.md, log-stat).
            if os.stat(self.log_file).st_size <= offset:
                return [], offset, True
            with open(self.log_file, "rb") as f:
                f.seek(offset)
                data = f.read(LOG_CHUNK + 1)
        except OSError:
            return [], offset, True
        at_end = len(data) <= LOG_CHUNK
        data = data[:LOG_CHUNK]
        if final and at_end:
            end = len(data)
        else:
            end = data.rfind(b"\n") + 1 or (len(data) if len(data) == LOG_CHUNK else 0)
        lines = data[:end].decode("utf-8", errors="replace").splitlines()
        return lines, offset + end, at_end and end == len(data)
