"""Remove a Ray run's copy on its node once the actor that made it is gone, however it went
(its run ended and the placement group was removed, the master that owned it stopped, the actor
was killed): the copy holds the trial's session token and must not outlive its run.

Started by the actor (``_ray_node``) and run by file path, so it imports nothing from trialkit
or Ray. It detaches (a new session, then a second fork), so Ray, which kills a worker's children
when the worker exits, leaves it to do its job.
Usage: python _ray_janitor.py ACTOR_PID DIRECTORY
"""

import os
import shutil
import sys
import time

#: Seconds between two looks at the actor's process.
_POLL_S = 0.5


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main() -> None:
    actor, directory = int(sys.argv[1]), sys.argv[2]
    if os.fork():  # the parent returns at once (the actor reaps it); the child is orphaned
        os._exit(0)
    while _alive(actor):
        time.sleep(_POLL_S)
    shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
