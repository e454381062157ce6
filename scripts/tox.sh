#!/usr/bin/env bash
# Bootstrap tox into .venv-tox (once) and run it: the only thing a fresh machine needs is python3.
# Usage: bash scripts/tox.sh [tox args]   e.g. bash scripts/tox.sh -e demo
# With no arguments it runs every env of tox.ini's envlist, TRIALKIT_TOX_PARALLEL (default 2) at a
# time: the suites wait on processes (masters, trials, launchers) more than they compute, so two
# side by side on 2 cores take ~0.6 of the time one after the other (README: the test command).
# An env's output is printed when it fails; each prints one line when it ends. The full run removes
# each env once it has passed (toxfile.py; TRIALKIT_TOX_DROP_ENVS=0 keeps them for re-runs), so the
# disk holds the envs running at once, not all twelve (~11 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-tox/bin/tox ]; then
  python3 -m venv .venv-tox
  .venv-tox/bin/pip install --quiet --disable-pip-version-check "tox>=4.11"
fi
export PIP_CONSTRAINT="$PWD/constraints.txt"
if [ $# -eq 0 ]; then
  export TRIALKIT_TOX_DROP_ENVS=${TRIALKIT_TOX_DROP_ENVS:-1}
  set -- run-parallel --parallel "${TRIALKIT_TOX_PARALLEL:-2}" --parallel-no-spinner
fi
exec .venv-tox/bin/tox "$@"
