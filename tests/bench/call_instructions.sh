#!/bin/sh
# Prints mcpmuxd's instructions per sequential tools/call (the event loop, the audit writer, all
# threads), counted by callgrind over 3,000 calls after a warm-up: the budget of issue 44.
# Counts, not times; the machine's load does not move them. See tests/bench/call_instructions.cpp.
#
# usage: tests/bench/call_instructions.sh [--build DIR (default build-count)] [call_instructions flags]
# e.g.   tests/bench/call_instructions.sh --keep /tmp/cg && callgrind_annotate --inclusive=yes /tmp/cg/callgrind.out.1-01
# The build directory is configured once as a release build at -O2 (meson: -Doptimization=2
# -Ddebug=false -Db_ndebug=true, one object per source, ccache when present) and built if needed.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-count
if [ "${1:-}" = "--build" ]; then build=$2; shift 2; fi

if [ ! -f "$build/build.ninja" ]; then
  cxx="g++"; command -v ccache >/dev/null && cxx="ccache g++"
  CXX="$cxx" meson setup "$build" "$root" -Doptimization=2 -Ddebug=false -Db_ndebug=true \
    -Dtests=true -Dunity=off >/dev/null
fi
ninja -C "$build" daemon/mcpmuxd tests/fake_mcp_server tests/call_instructions >/dev/null
exec "$build/tests/call_instructions" --mcpmuxd "$build/daemon/mcpmuxd" \
  --fake "$build/tests/fake_mcp_server" "$@"
