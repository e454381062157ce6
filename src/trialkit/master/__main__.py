"""``python -m trialkit.master``: run a master in the foreground."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import NoReturn

from .. import LOG_FORMAT
from .._home import trialkit_home
from ..client import (
    IDLE_TIMEOUT_ENV,
    check_slots,
    default_idle_timeout,
    parse_idle_timeout,
)
from ..config import MasterConfigError
from ._daemon import serve


def _bad_option(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """One line on stderr and exit status 2, as ``trialkit master up`` answers bad options."""
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m trialkit.master", description="Run a trialkit master."
    )
    parser.add_argument(
        "--home", type=Path, default=None, help="state directory (default $TRIALKIT_HOME)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument("--slots", type=int, default=None, help="CPU slots when there are no GPUs")
    parser.add_argument("--db", default=None, help="database URL (default SQLite in the home)")
    parser.add_argument(
        "--idle-timeout",
        default=None,
        help=f"stop after this long with no running trial and no API call, e.g. 30m; 0 = never "
        f"(default ${IDLE_TIMEOUT_ENV}, else never)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="master config file with resource pools (default $TRIALKIT_HOME/master.yaml)",
    )
    args = parser.parse_args()
    try:
        check_slots(args.slots)
        idle = (
            default_idle_timeout(on_demand=False)
            if args.idle_timeout is None
            else parse_idle_timeout(args.idle_timeout, "--idle-timeout")
        )
    except ValueError as e:  # SlotsError is one
        _bad_option(parser, str(e))
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    try:
        _serve(args, idle)
    except MasterConfigError as e:
        for line in str(e).splitlines():  # "Error" lines are what `master up` shows
            print(f"Error: {line}", file=sys.stderr)
        raise SystemExit(1) from None


def _serve(args: argparse.Namespace, idle: float) -> None:
    serve(
        args.home or trialkit_home(),
        host=args.host,
        slots=args.slots,
        db_url=args.db,
        idle_timeout=idle,
        config_file=args.config,
    )


if __name__ == "__main__":
    main()
