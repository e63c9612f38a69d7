#!/usr/bin/env bash
# Short chaos run (20 s) for the test suite; needs $MCPMUXD, $MCPMUX and $FAKE_MCP_SERVER.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
: "${MCPMUXD:=$root/build/daemon/mcpmuxd}"
: "${MCPMUX:=$root/build/daemon/mcpmux}"
: "${FAKE_MCP_SERVER:=$root/build/tests/fake_mcp_server}"
export MCPMUXD MCPMUX FAKE_MCP_SERVER
exec python3 "$here/chaos.py" --duration 20 "$@"
