#!/usr/bin/env bash
# Bootstrap tox into .venv-tox (once) and run it: the only thing a fresh machine needs is python3.
# Usage: bash scripts/tox.sh [tox args]   e.g. bash scripts/tox.sh -e demo
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-tox/bin/tox ]; then
  python3 -m venv .venv-tox
  .venv-tox/bin/pip install --quiet --disable-pip-version-check "tox>=4.11"
fi
export PIP_CONSTRAINT="$PWD/constraints.txt"
exec .venv-tox/bin/tox "$@"
