"""The embedded master: REST API, scheduler and trial supervision on one machine.

``serve`` runs one in this process. Finding, starting and stopping a master from a client is
``trialkit._discovery``, re-exported here for scripts and tests that start a master."""

from .._discovery import (
    MAX_SLOTS,
    SlotsError,
    check_slots,
    client_for,
    master_file,
    start_background,
    stop_master,
)
from ._daemon import serve

__all__ = [
    "MAX_SLOTS",
    "SlotsError",
    "check_slots",
    "client_for",
    "master_file",
    "serve",
    "start_background",
    "stop_master",
]
