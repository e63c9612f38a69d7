#!/usr/bin/env bash
# How long a newcomer waits: from a clean clone to the daemon answering `mcpmux tools`, the way
# README's first run does it (`scripts/run`), with an empty compiler cache and a fresh home.
# Prints the figures; the exit status is non-zero only when the daemon never answered.
#
# usage: tests/bench/first_run.sh [--limit SECONDS (default 900)]
# The Debian packages must be present (scripts/install-deps --run); their installation on a
# fresh machine is a separate figure (docs/benchmarks.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
limit=900
[[ ${1:-} == --limit ]] && limit=$2

work=$(mktemp -d)
daemon_pid=
cleanup() {
  [[ -n $daemon_pid ]] && kill -- -"$daemon_pid" 2>/dev/null
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A clean clone of the committed tree, an empty ccache, and a home with no config (the daemon
# runs its embedded default) and its own runtime directory.
git clone -q --no-hardlinks "$root" "$work/clone"
mkdir -p "$work/home" "$work/run" && chmod 700 "$work/run"
export CCACHE_DIR=$work/ccache HOME=$work/home XDG_RUNTIME_DIR=$work/run
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_CACHE_HOME MCPMUX_SOCKET MCPMUX_CONFIG

start=$(date +%s%N)
setsid "$work/clone/scripts/run" >"$work/run.log" 2>&1 &
daemon_pid=$!

# Two moments: the daemon answers `mcpmux tools` (the figure README gives), and the default
# config's servers have started so that tools are listed (npx fetches them on a first run: that
# part is the network's).
mcpmux=$work/clone/build-run/daemon/mcpmux
answered= listed=
while :; do
  now=$((($(date +%s%N) - start) / 1000000))  # ms since the start
  ((now <= limit * 1000)) || break
  if ! kill -0 "$daemon_pid" 2>/dev/null; then break; fi
  if [[ -x $mcpmux ]] && "$mcpmux" tools >"$work/tools.out" 2>/dev/null; then
    [[ -n $answered ]] || answered=$now
    if grep -q '__' "$work/tools.out"; then
      listed=$now
      break
    fi
  fi
  sleep 0.5
done

if [[ -z $answered ]]; then
  echo "first run: the daemon did not answer \`mcpmux tools\` within ${limit} s; its output:"
  tail -n 30 "$work/run.log"
  exit 1
fi
build_line=$(grep -m1 -o 'build: [0-9]* s' "$work/run.log" || true)
printf 'first run: %d.%d s from a clean clone to `mcpmux tools` answering (%s CPUs, cold ccache; scripts/run %s)\n' \
  $((answered / 1000)) $((answered % 1000 / 100)) "$(nproc)" "${build_line:-build: ?}"
if [[ -n $listed ]]; then
  echo "  the default servers' tools listed after $((listed / 1000)) s (npx fetched them)"
else
  echo "  the default servers listed no tools within ${limit} s (npx could not fetch them?)"
fi
