"""Run one trial process and record its exit code.

Started by the master as the leader of a new process group and run by file path, so it imports
nothing from trialkit. Output goes to a log file (not a pipe), and the exit code to a file, so
a trial outlives a master crash and the next master can adopt it.
Usage: python _trial_supervisor.py EXIT_FILE LOG_FILE -- ARGV...
"""

import ctypes
import os
import signal
import subprocess
import sys

_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1


def _become_subreaper() -> None:
    """Orphaned descendants (e.g. python under ``sh -c``) become our children, so we can wait
    for all of them: a trial has exited only when every process it started is gone."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _die_with_supervisor() -> None:
    """Run in the child before exec: if the supervisor is killed, the trial gets SIGKILL at
    once rather than run on unsupervised (the master then kills whatever else is left)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _wait_for_descendants() -> None:
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def main() -> int:
    exit_file, log_file, sep, *argv = sys.argv[1:]
    if sep != "--" or not argv:
        print("usage: _trial_supervisor.py EXIT_FILE LOG_FILE -- ARGV...", file=sys.stderr)
        return 2
    _become_subreaper()
    with open(log_file, "ab", buffering=0) as log:
        try:
            child = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_supervisor,
            )
        except OSError as e:
            log.write(f"cannot start {argv[0]!r}: {e}\n".encode())
            code = 127
        else:
            # The whole group gets SIGTERM from the master; the supervisor just keeps waiting.
            signal.signal(signal.SIGTERM, lambda *_: None)
            code = child.wait()
            _wait_for_descendants()
    tmp = exit_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(code))
    os.replace(tmp, exit_file)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
