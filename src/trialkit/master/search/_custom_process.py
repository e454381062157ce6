"""The master's side of a custom searcher run in its own process (``_custom_child``).

``CustomSearcherProcess`` is the DrivenMethod the driver feeds: each event is one JSON line to
the child and one answer back, within ``CALL_TIMEOUT`` seconds. The child's state comes back
with every answer, so the driver saves it as before and a restarted master starts a fresh child
from it. A child that exits, hangs or answers an error fails the experiment with one line naming
the class; the master goes on. ``CALL_TIMEOUT`` can be set for a master with the environment
variable ``TRIALKIT_SEARCHER_CALL_TIMEOUT`` (seconds).

Its calls block, so the master makes them on the experiment's own thread, never under the
engine's lock (``_driver``, ``_serial``): a hang or a slow import (``START_TIMEOUT``) delays only
that experiment. One thread calls it; ``kill`` alone may come from another (the search let go).
"""

from __future__ import annotations

import collections
import json
import logging
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, NoReturn

from ... import _modeldir
from ...searcher import (
    DrivenMethod,
    ExitedReason,
    Operation,
    SearcherError,
    decode_operation,
)

logger = logging.getLogger("trialkit.master")

#: seconds one handler call may take before its process is killed and the experiment fails
CALL_TIMEOUT = 60.0
#: seconds for the start: importing the user's module (it may import a framework)
START_TIMEOUT = 300.0
_STDERR_TAIL = 5
_CALL_TIMEOUT_VARIABLE = "TRIALKIT_SEARCHER_CALL_TIMEOUT"


def call_timeout_from_env() -> float:
    """``CALL_TIMEOUT``, or the seconds ``$TRIALKIT_SEARCHER_CALL_TIMEOUT`` gives."""
    value = os.environ.get(_CALL_TIMEOUT_VARIABLE)
    try:
        return float(value) if value else CALL_TIMEOUT
    except ValueError:
        raise SearcherError(
            f"{_CALL_TIMEOUT_VARIABLE}={value!r}: not a number of seconds"
        ) from None


class CustomSearcherProcess(DrivenMethod):
    """A user ``SearchMethod`` (``module:Class`` in the model directory) in a child process."""

    def __init__(
        self,
        experiment_id: int,
        spec: str,
        kwargs: Mapping[str, Any],
        seed: int,
        metric: str,
        model_def: bytes | None,
        *,
        call_timeout: float = CALL_TIMEOUT,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self.experiment_id = experiment_id
        self.spec = spec
        self.name = spec.partition(":")[2] or spec
        self._start_request = {"spec": spec, "kwargs": dict(kwargs), "seed": seed, "metric": metric}
        self._model_def = model_def
        self._call_timeout = call_timeout
        self._start_timeout = start_timeout
        self._state: dict[str, Any] | None = None
        self._progress = 0.0
        self._failed: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._root: Path | None = None
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL)
        self._stderr_pump: threading.Thread | None = None
        self._killed = False

    @property
    def call_timeout(self) -> float:
        return self._call_timeout

    def kill(self) -> None:
        """Kill the process now, even while another thread waits for its answer (that call
        fails); any later call fails too. The one method safe to call from another thread."""
        self._killed = True
        proc = self._proc
        if proc is not None:
            proc.kill()

    # DrivenMethod ------------------------------------------------------------------------------

    def initial_operations(self) -> list[Operation]:
        return self._call("initial_operations")

    def on_trial_created(self, request_id: str) -> list[Operation]:
        return self._call("on_trial_created", request_id)

    def on_validation_completed(
        self, request_id: str, metrics: Mapping[str, Any], length: int | None = None
    ) -> list[Operation]:
        return self._call("on_validation_completed", request_id, dict(metrics), length)

    def on_trial_progress(self, request_id: str, progress: float) -> list[Operation]:
        return self._call("on_trial_progress", request_id, progress)

    def on_trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        return self._call("on_trial_exited_early", request_id, ExitedReason(reason).value)

    def on_trial_closed(self, request_id: str) -> list[Operation]:
        return self._call("on_trial_closed", request_id)

    def progress(self) -> float:
        return self._progress

    def save(self) -> dict[str, Any]:
        if self._state is None:
            self._ensure_started()
        assert self._state is not None
        return self._state

    def load(self, state: Mapping[str, Any]) -> None:
        """Keep the saved state; the process starts from it on the first event."""
        self.close()
        self._state = dict(state)
        self._progress = float(state.get("progress", 0.0))

    # What the master asks to repair a crash, answered from the state the child last sent
    # (``CustomMethod.save``) without a call: an event told but not answered before a crash
    # (a trial's close, the metric of its operation) is told again.

    def knows(self, request_id: str) -> bool:
        return _canonical(request_id) in self._book("trialsCreated")

    def is_closed(self, request_id: str) -> bool:
        return _canonical(request_id) in self._book("trialsClosed")

    def outstanding(self, request_id: str) -> int | None:
        length = (self._state or {}).get("inflight", {}).get(request_id)
        return int(length) if length is not None else None

    def _book(self, key: str) -> set[str]:
        return {_canonical(r) for r in (self._state or {}).get("searcher_state", {}).get(key, [])}

    def close(self) -> None:
        """Stop the process (stdin closed, then killed if it lingers) and drop its files."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop(proc)
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    # The process -------------------------------------------------------------------------------

    def _call(self, handler: str, *args: Any) -> list[Operation]:
        self._ensure_started()
        answer = self._request({"call": handler, "args": list(args)}, handler, self._call_timeout)
        return [decode_operation(op) for op in answer["ops"]]

    def _ensure_started(self) -> None:
        if self._failed is not None:
            raise SearcherError(self._failed)
        if self._killed:
            raise SearcherError(f"custom searcher {self.name}: its process was killed")
        if self._proc is not None:
            return
        self._root = Path(tempfile.mkdtemp(prefix=f"trialkit-searcher-{self.experiment_id}-"))
        if self._model_def:
            _modeldir.unpack(self._model_def, self._root)
        self._answers = queue.Queue()
        self._stderr_tail.clear()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "trialkit.master.search._custom_child", str(self._root)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                cwd=self._root,
                start_new_session=True,  # a Ctrl-C meant for the master must not fail the search
            )
        except OSError as e:  # e.g. no process left to fork
            self._fail(f"start: its process could not start: {e}")
        if self._killed:  # killed while it started: ``kill`` did not see it
            self._fail("start: its process was killed")
        assert self._proc.stdout is not None and self._proc.stderr is not None
        _reader(self._proc.stdout, self._answers.put, f"searcher-{self.experiment_id}-out")
        self._stderr_pump = _reader(
            self._proc.stderr, self._log_stderr, f"searcher-{self.experiment_id}-err"
        )
        start = {**self._start_request, "state": self._state}
        self._request({"start": start}, "start", self._start_timeout)

    def _log_stderr(self, line: str | None) -> None:
        if line is None:
            return
        line = line.rstrip("\n")
        self._stderr_tail.append(line)
        logger.info("experiment %d: custom searcher %s: %s", self.experiment_id, self.name, line)

    def _request(self, request: Mapping[str, Any], handler: str, timeout: float) -> dict[str, Any]:
        """Send one request and wait for its answer; any failure fails the search for good."""
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            self._fail(f"{handler}: no answer within {timeout:g}s (its process was killed)")
        except OSError:  # the process was already gone: a broken pipe
            line = None
        if line is None:
            self._fail(f"{handler}: its process exited with code {_exit_code(proc)}")
        try:
            answer = dict(json.loads(line))
        except ValueError:
            self._fail(f"{handler}: answered {line[:200]!r}, not JSON")
        if "error" in answer:
            self.close()
            self._failed = str(answer["error"])
            raise SearcherError(self._failed)
        self._progress = float(answer["progress"])
        # progress rides along in the saved state: a restarted master shows it before any event
        self._state = {**answer["state"], "progress": self._progress}
        return answer

    def _fail(self, what: str) -> NoReturn:
        """Kill the process and raise the one-line error every later call repeats."""
        proc = self._proc
        if proc is not None:
            proc.kill()
            proc.wait()
            if self._stderr_pump is not None:
                self._stderr_pump.join(timeout=2)  # its last words, for the message
        self.close()
        last = f" (last output: {self._stderr_tail[-1]})" if self._stderr_tail else ""
        self._failed = f"custom searcher {self.name}.{what}{last}"
        raise SearcherError(self._failed)


def _canonical(request_id: str) -> str:
    """A request id as ``SearcherState`` writes it (a UUID's canonical form)."""
    try:
        return str(uuid.UUID(str(request_id)))
    except ValueError:
        return str(request_id)


def _reader(stream: IO[str], sink: Callable[[str | None], None], name: str) -> threading.Thread:
    """A daemon thread handing each line of ``stream`` to ``sink``, then None at its end."""

    def pump() -> None:
        for line in stream:
            sink(line)
        sink(None)

    thread = threading.Thread(target=pump, name=name, daemon=True)
    thread.start()
    return thread


def _exit_code(proc: subprocess.Popen[str]) -> int | None:
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return None


def _stop(proc: subprocess.Popen[str]) -> None:
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
