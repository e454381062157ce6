#!/usr/bin/env bash
# Debian's chromium for the web UI's browser tests (Playwright drives it; no browser download).
# Does nothing when a chromium is already installed; needs root (CI runs as root) otherwise.
set -euo pipefail
if [ -x "${TRIALKIT_CHROMIUM:-/usr/bin/chromium}" ] || command -v chromium >/dev/null 2>&1; then
    echo "chromium: $(command -v chromium || echo "${TRIALKIT_CHROMIUM}")"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "chromium is missing: run 'apt-get install -y chromium' as root (or set TRIALKIT_CHROMIUM)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "chromium: $(command -v chromium)"
