#!/usr/bin/env bash
# The shell completions of mcpmux (completions/): the bash one is sourced and asked, as bash
# asks it at a Tab, for commands, options and the server and profile names of a running daemon
# (fake servers); the zsh and fish ones are syntax-checked where those shells are installed.
# Needs MCPMUXD, MCPMUX and FAKE_MCP_SERVER (as the integration tests).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
: "${MCPMUXD:?}" "${MCPMUX:?}" "${FAKE_MCP_SERVER:?}"

tmp=$(mktemp -d)
daemon=""
cleanup() {
  [[ -z $daemon ]] || { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null || true; }
  rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A daemon with two servers and a profile, on a socket of its own.
mkdir -m 0700 "$tmp/run"
sock=$tmp/run/mcpmux.sock
cat >"$tmp/config.toml" <<TOML
[servers.files]
command = "$FAKE_MCP_SERVER"
[servers.git-hub_2]
command = "$FAKE_MCP_SERVER"
[profiles.review]
servers = ["files"]
TOML
HOME=$tmp XDG_STATE_HOME=$tmp/state "$MCPMUXD" --config "$tmp/config.toml" --socket "$sock" \
  >"$tmp/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done
[[ -S $sock ]] || { cat "$tmp/daemon.log"; fail "the daemon does not listen"; exit 1; }

# complete WORD...: COMPREPLY for the command line WORD... (the last word is the one completed),
# with mcpmux found on PATH as a user's shell finds it.
source "$src/completions/mcpmux.bash"
PATH=$(dirname "$MCPMUX"):$PATH
complete_line() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _mcpmux
  echo "${COMPREPLY[*]}"
}
expect() {  # expect "WANTED" WORD...
  local wanted=$1 got
  shift
  got=$(complete_line "$@")
  [[ $got == "$wanted" ]] || fail "mcpmux ${*:2}<Tab>: got '$got', wanted '$wanted'"
}

[[ $(complete -p mcpmux) == *"-F _mcpmux mcpmux" ]] || fail "mcpmux has no completion"
expect "restart reload remove" mcpmux re
expect "status" mcpmux --timeout 5000 st
expect "--socket" mcpmux --so
expect "--spawn --socket" mcpmux connect --s
expect "--json --server --hidden --profile --socket --timeout --help --version" mcpmux tools --
expect "--follow" mcpmux logs --f
expect "login logout" mcpmux auth lo
expect "claude-code claude-code-project" mcpmux adopt claude-c
# Names from the running daemon, wherever the socket is given.
expect "files git-hub_2" mcpmux --socket "$sock" logs ""
expect "git-hub_2" mcpmux logs --socket "$sock" g
expect "git-hub_2" mcpmux --socket="$sock" auth login g
expect "files" mcpmux --socket "$sock" tools --server f
expect "review" mcpmux --socket "$sock" connect --profile ""
expect "" mcpmux --socket "$sock" restart files ""
# No daemon there: no names, and no wait beyond the connection attempt.
expect "" mcpmux --socket "$tmp/none.sock" logs ""

# The other shells: their syntax, where they are installed (scripts/install-deps installs them).
if command -v zsh >/dev/null; then
  zsh -n "$src/completions/_mcpmux" || fail "zsh -n completions/_mcpmux"
  # At a Tab in an interactive zsh: a command, and a server name from the daemon.
  zsh_offers() {  # zsh_offers LINE WORD
    timeout 10 zsh -f "$src/tests/completions/zsh_complete.zsh" "$src/completions" \
      "$(dirname "$MCPMUX")" "$1" "$2" >/dev/null || fail "zsh: $1<Tab> does not offer $2"
  }
  zsh_offers "mcpmux sta" status
  zsh_offers "mcpmux --socket $sock logs " git-hub_2
  zsh_offers "mcpmux restart --socket=$sock " git-hub_2
else
  echo "zsh not installed: completions/_mcpmux not checked"
fi
if command -v fish >/dev/null; then
  fish -n "$src/completions/mcpmux.fish" || fail "fish -n completions/mcpmux.fish"
  for line in "mcpmux --socket $sock logs " "mcpmux restart --socket=$sock "; do
    got=$(PATH=$PATH fish -c "source '$src/completions/mcpmux.fish'; complete -C '$line'")
    [[ $got == $'files\ngit-hub_2' ]] || fail "fish: $line<Tab>: got '$got'"
  done
else
  echo "fish not installed: completions/mcpmux.fish not checked"
fi

((failures == 0)) && echo "completions: all passed"
((failures == 0))
