"""The embedded master: REST API, scheduler and trial supervision on one machine."""

from ._daemon import (
    MAX_SLOTS,
    SlotsError,
    check_slots,
    client_for,
    master_file,
    serve,
    start_background,
    stop_master,
)

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
