"""A trial whose log has two ranks and a traceback: the example the logs filters (the web UI's
and ``trialkit t logs --level/--rank``) are tested on. Two workers under trialkit's rank
prefixer, logging in trialkit's format; rank 1 fails with a traceback (lines without a level of
their own); the launcher's last line has neither rank nor level."""

from __future__ import annotations

LAUNCH = """
import subprocess, sys
wrap = [sys.executable, "-m", "trialkit.launch.wrap_rank"]
for rank in ("0", "1"):
    subprocess.run([*wrap, rank, sys.executable, "worker.py", rank], check=True)
print("launcher: both workers done", flush=True)
"""
WORKER = """
import logging, sys
import trialkit
logging.basicConfig(level=logging.DEBUG, format=trialkit.LOG_FORMAT)
log = logging.getLogger("worker")
rank = sys.argv[1]
log.debug("debug from rank %s", rank)
log.info("info from rank %s", rank)
log.warning("warning from rank %s", rank)
if rank == "1":
    try:
        raise ValueError("bad batch")
    except ValueError:
        log.exception("error from rank 1")
"""
