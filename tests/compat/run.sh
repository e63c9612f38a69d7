#!/usr/bin/env bash
# The compatibility sweep: installs the pinned MCP servers (npm ci), then runs them all behind one
# mcpmuxd (sweep.mjs; pass --chaos to SIGKILL each server once). See README.md in this folder.
# Binaries: $MCPMUXD/$MCPMUX, else build/daemon/. Exit status: sweep.mjs's.
set -euo pipefail
cd "$(dirname "$0")"
# puppeteer's postinstall would download Chromium: nothing here needs it (and it cannot be fetched).
export PUPPETEER_SKIP_DOWNLOAD=1 PUPPETEER_SKIP_CHROMIUM_DOWNLOAD=1
echo "== compat: npm ci (tests/compat)"
start=$SECONDS
npm ci --no-audit --no-fund --loglevel=error
echo "== compat: npm ci took $((SECONDS - start)) s"
exec node sweep.mjs "$@"
