"""``python -m trialkit.master``: run a master in the foreground."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from .. import LOG_FORMAT
from .._home import trialkit_home
from ._daemon import serve


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
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    serve(args.home or trialkit_home(), host=args.host, slots=args.slots, db_url=args.db)


if __name__ == "__main__":
    main()
