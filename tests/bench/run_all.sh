#!/bin/sh
# Runs every row of the benchmark suite (tests/bench/bench_suite.cpp) on a release build and
# prints one table and a targets block. Figures only: the exit status is 0 even when a target is
# missed (non-zero only when a row could not run).
#
# usage: tests/bench/run_all.sh [--build DIR (default build-bench)] [bench_suite flags: --calls N --reps N]
# The build directory is configured (--buildtype=release, ccache when present) and built if needed.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-bench
if [ "${1:-}" = "--build" ]; then build=$2; shift 2; fi

if [ ! -f "$build/build.ninja" ]; then
  cxx="g++"; command -v ccache >/dev/null && cxx="ccache g++"
  CXX="$cxx" meson setup "$build" "$root" --buildtype=release -Dtests=true -Dunity=off >/dev/null || exit 2
fi
ninja -C "$build" daemon/mcpmuxd daemon/mcpmux daemon/mcpmux-sandbox tests/fake_mcp_server tests/relay tests/bench_suite >/dev/null || exit 2

# The SDK client is ~10x slower per call than the C++ one: a tenth of --calls (at least 1000).
sdk_calls=2000
prev=
for a in "$@"; do
  [ "$prev" = "--calls" ] && sdk_calls=$(( a / 10 > 1000 ? a / 10 : 1000 ))
  prev=$a
done
node_entry=$root/tests/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js
out=$(mktemp)
trap 'rm -f "$out"' EXIT

echo "mcpmux benchmark suite — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, build $build"
echo "uptime before: $(uptime)"
echo
printf '%-9s %-46s %16s %16s %18s\n' row measurement mcpmux direct comparison
printf '%s\n' "-------------------------------------------------------------------------------------------------------------"
status=0
for r in floor calls audit node scale start payload clients http endpoint; do
  "$build/tests/bench_suite" --row "$r" --mcpmuxd "$build/daemon/mcpmuxd" \
    --fake "$build/tests/fake_mcp_server" --mcpmux "$build/daemon/mcpmux" \
    --relay "$build/tests/relay" --node-entry "$node_entry" "$@" >"$out.$r" 2>"$out.$r.err" \
    || status=1
  grep -v '^target:' "$out.$r"
  grep '^target:' "$out.$r" >>"$out"
  [ -s "$out.$r.err" ] && sed 's/^/  stderr: /' "$out.$r.err" | head -20
  rm -f "$out.$r" "$out.$r.err"
done
# The floor for the official TypeScript SDK client (needs tests/node's npm packages).
if command -v node >/dev/null; then
  node "$root/tests/bench/sdk_floor.mjs" --mcpmuxd "$build/daemon/mcpmuxd" \
    --mcpmux "$build/daemon/mcpmux" --relay "$build/tests/relay" --node-entry "$node_entry" \
    --calls "$sdk_calls" >"$out.sdk" 2>"$out.sdk.err" || status=1
  grep -v '^target:' "$out.sdk"
  grep '^target:' "$out.sdk" >>"$out"
  [ -s "$out.sdk.err" ] && sed 's/^/  stderr: /' "$out.sdk.err" | head -20
  rm -f "$out.sdk" "$out.sdk.err"
  # Both protocol eras through mcpmux connect, each against its own era's server.
  node "$root/tests/bench/eras.mjs" --mcpmuxd "$build/daemon/mcpmuxd" --mcpmux "$build/daemon/mcpmux" \
    --node-entry "$node_entry" --calls "$sdk_calls" 2>"$out.eras.err" || status=1
  [ -s "$out.eras.err" ] && sed 's/^/  stderr: /' "$out.eras.err" | head -20
  rm -f "$out.eras.err"
fi
echo
# What the sandbox costs a server's start (bubblewrap, the cgroup, the seccomp filter).
python3 "$root/tests/bench/sandbox_start.py" --build "$build" -n 20 || status=1
echo
echo "uptime after:  $(uptime)"
echo
echo "targets:"
sed 's/^target: /  /' "$out"
exit $status
