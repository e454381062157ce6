"""The client side of the master: the typed REST client, finding/starting/stopping a master, and
``LocalSearchRunner`` (a custom search method driven from the user's own process).

Used by the CLI, trial processes and user scripts; nothing here imports the master's service
code (FastAPI, SQLAlchemy), so a client starts fast."""

from typing import TYPE_CHECKING

from ..errors import APIError, MasterUnavailable
from ._discovery import (
    DEFAULT_IDLE_TIMEOUT,
    IDLE_TIMEOUT_ENV,
    MASTER_FILE,
    MAX_SLOTS,
    SlotsError,
    check_slots,
    client_for,
    default_idle_timeout,
    master_file,
    parse_idle_timeout,
    run_in_foreground,
    start_background,
    stop_master,
)
from ._master_client import MasterClient, api_error, read_master_file

if TYPE_CHECKING:  # loaded on first use: see __getattr__ below
    from ._search_runner import LocalSearchRunner

__all__ = [
    "APIError",
    "DEFAULT_IDLE_TIMEOUT",
    "IDLE_TIMEOUT_ENV",
    "LocalSearchRunner",
    "MASTER_FILE",
    "MAX_SLOTS",
    "MasterClient",
    "MasterUnavailable",
    "SlotsError",
    "api_error",
    "check_slots",
    "client_for",
    "default_idle_timeout",
    "master_file",
    "parse_idle_timeout",
    "read_master_file",
    "run_in_foreground",
    "start_background",
    "stop_master",
]


def __getattr__(name: str) -> object:
    # LocalSearchRunner loads the search methods' event types; plain clients do not need them.
    if name == "LocalSearchRunner":
        from ._search_runner import LocalSearchRunner

        return LocalSearchRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
