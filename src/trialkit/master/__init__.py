"""The embedded master: REST API, scheduler and trial supervision on one machine."""

from ._daemon import client_for, master_file, serve, start_background, stop_master

__all__ = ["client_for", "master_file", "serve", "start_background", "stop_master"]
