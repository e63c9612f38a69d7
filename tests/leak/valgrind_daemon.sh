#!/usr/bin/env bash
# Valgrind memcheck proof of a whole daemon run (issue 8).
#
# Runs mcpmuxd under `valgrind --tool=memcheck --leak-check=full` with fake stdio servers (one of
# them exits after every handshake, so it cycles through backoff all along) and drives it through
# what a long-lived daemon lives through: client connects (`mcpmux connect` sessions speaking
# NDJSON MCP, several at once, and one-shot `mcpmux call`s), well over a hundred tools/call,
# resources, prompts, subscriptions, completions, logging and progress, tools that crash their
# server mid-call, `mcpmux restart`, reloads (servers added, removed and changed; an invalid file
# rejected; through `mcpmux reload`, SIGHUP and inotify), SIGKILLed upstreams that must come back,
# a per-client isolated server, and clients killed while their call is in flight. Then SIGTERM.
#
# Proves, for that run: the daemon exits 0 (valgrind's --error-exitcode=99 not triggered), memcheck
# reports "ERROR SUMMARY: 0 errors" (no invalid read or write, no use of uninitialised values, no
# bad free, no definitely or indirectly lost block), no byte definitely or indirectly lost (or
# "All heap blocks were freed"), no descriptor the daemon opened still open at its exit
# (--track-fds=yes), and no server process left behind.
#
# usage: tests/leak/valgrind_daemon.sh [BUILD_DIR]    (default: build; relative to the checkout)
# Needs valgrind and python3; takes about half a minute. MCPMUX_TEST_KEEP=1 keeps the temporary
# directory (it is kept anyway on failure).
#
# Valgrind 3.19 (Debian 12) does not know pidfd_open: the log then holds "unhandled amd64-linux
# syscall: 434" warnings, and the daemon watches its children through SIGCHLD instead of pidfds.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build=${1:-build}
[[ $build == /* ]] || build=$root/$build
mcpmuxd=$build/daemon/mcpmuxd
mcpmux=$build/daemon/mcpmux
fake=$build/tests/fake_mcp_server
supp=$here/valgrind.supp

for f in "$mcpmuxd" "$mcpmux" "$fake"; do
  [[ -x $f ]] || {
    echo "FAIL: $f is missing (build it first: ninja -C $build)"
    exit 1
  }
done
command -v valgrind >/dev/null || {
  echo "FAIL: valgrind is not installed (scripts/install-deps installs it)"
  exit 1
}

started=$(date +%s)
tmp=$(mktemp -d /tmp/mcpmux-vg.XXXXXX)
sock=$tmp/run/mcpmux.sock
conf=$tmp/config.toml
vglog=$tmp/valgrind.log
dlog=$tmp/daemon.log
mkdir -m 700 "$tmp/run" "$tmp/xdg-config" "$tmp/cache" "$tmp/state"
export XDG_RUNTIME_DIR=$tmp/run XDG_CONFIG_HOME=$tmp/xdg-config XDG_CACHE_HOME=$tmp/cache
export XDG_STATE_HOME=$tmp/state
unset MCPMUX_CONFIG MCPMUX_SOCKET MCPMUX_TIMEOUT_MS
# The fake servers keep their markers in $tmp, under /tmp, which a sandbox hides: they run
# unsandboxed here, as in the integration tests (tests/sandbox/ proves the sandbox).
export MCPMUX_SANDBOX=off

daemon_pid=""
bg_pids=()
failed=0
cleanup() {
  local rc=$? p
  ((rc == 0)) || failed=1
  for p in "${bg_pids[@]+"${bg_pids[@]}"}"; do kill -9 "$p" 2>/dev/null || true; done
  if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -9 "$daemon_pid" 2>/dev/null || true
  fi
  if [[ -n ${MCPMUX_TEST_KEEP:-} || $failed -ne 0 ]]; then
    echo "(kept $tmp)"
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

fail() {
  failed=1
  echo "FAIL: $*"
  echo "--- last lines of the daemon log ($dlog)"
  tail -n 30 "$dlog" 2>/dev/null || true
  echo "--- last lines of the valgrind log ($vglog)"
  grep -v '^--[0-9]*--' "$vglog" 2>/dev/null | tail -n 30 || true
  echo "FAIL: valgrind daemon run"
  exit 1
}
step() { echo "[$(($(date +%s) - started))s] $*"; }

# Counters for the report.
calls=0        # tools/call answered (successes and expected tool errors)
requests=0     # other MCP requests answered in sessions (lists, reads, subscribe, ...)
connects=0     # client connections: connect sessions and CLI invocations that reach the daemon
restarts=0     # mcpmux restart
reloads=0      # reloads of a valid file (mcpmux reload, SIGHUP, inotify)
bad_reloads=0  # reloads of an invalid file, rejected
kills=0        # upstream servers killed with SIGKILL
crashes=0      # servers crashed through their own tool mid-call
disconnects=0  # clients killed with a call in flight

cli() { "$mcpmux" --socket "$sock" --timeout 60000 "$@"; }

# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds.
wait_for() {
  local what=$1 secs=$2
  shift 2
  local deadline=$(($(date +%s) + secs))
  until "$@" >/dev/null 2>&1; do
    kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon died while waiting for: $what"
    (($(date +%s) < deadline)) || fail "timed out after ${secs}s waiting for: $what"
    sleep 0.1
  done
}

status_json() { cli status --json; }

# server_field NAME FIELD: prints .servers[NAME].FIELD of mcpmux/status ("" when absent/null).
server_field() {
  status_json | python3 -c '
import json, sys
s = json.load(sys.stdin)
for srv in s["servers"]:
    if srv["name"] == sys.argv[1]:
        v = srv.get(sys.argv[2])
        print("" if v is None else v)
' "$1" "$2"
}

# server_pid NAME: the pid of a server.
server_pid() {
  local pid
  pid=$(server_field "$1" pid) || fail "mcpmux status failed"
  [[ -n $pid ]] || fail "no pid for $1 in mcpmux status"
  echo "$pid"
}

# marked_processes: pids of the processes carrying this run's mark in their environment, but the
# daemon: its children (every server it started, per-client ones included) inherit it.
marked_processes() {
  { grep -lzx "MCPMUX_VG_MARK=$tmp" /proc/[0-9]*/environ 2>/dev/null || true; } |
    sed 's|^/proc/\([0-9]*\)/environ$|\1|' | grep -vx "${daemon_pid:-0}" || true
}
no_marked_processes() { [[ -z $(marked_processes) ]]; }

# is_ready NAME [NOT_PID]: the server is ready (with a pid other than NOT_PID).
is_ready() {
  local state pid
  state=$(server_field "$1" state) || return 1
  [[ $state == ready ]] || return 1
  [[ -z ${2:-} ]] && return 0
  pid=$(server_field "$1" pid) || return 1
  [[ -n $pid && $pid != "$2" ]]
}
all_ready() {
  local s
  for s in "$@"; do is_ready "$s" || return 1; done
}

# servers_are NAMES...: exactly these servers are configured (any order).
servers_are() {
  local want got
  want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
  got=$(status_json | python3 -c '
import json, sys
print("\n".join(sorted(s["name"] for s in json.load(sys.stdin)["servers"])))' | tr '\n' ' ')
  [[ $want == "$got" ]]
}

# call TOOL ARGS EXPECTED: `mcpmux call` must succeed and print EXPECTED.
call() {
  local out
  connects=$((connects + 1))
  out=$(cli call "$1" "$2" 2>&1) || fail "mcpmux call $1 $2 failed: $out"
  [[ $out == *"$3"* ]] || fail "mcpmux call $1 $2 printed '$out', expected '$3'"
  calls=$((calls + 1))
}

# call_fails TOOL ARGS: `mcpmux call` must exit 1 (the tool or the daemon reported an error).
call_fails() {
  local out rc=0
  connects=$((connects + 1))
  out=$(cli call "$1" "$2" 2>&1) || rc=$?
  [[ $rc -eq 1 ]] || fail "mcpmux call $1 $2 exited $rc (expected 1): $out"
  calls=$((calls + 1))
}

init_lines() {
  printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"vg","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}'
}

# answers FILE: how many JSON-RPC responses (lines with an "id") FILE holds.
answers() { grep -c '"id":' "$1" 2>/dev/null || true; }
# has_answers FILE N: FILE holds at least N responses.
has_answers() { (($(answers "$1") >= $2)); }

# Sessions: `mcpmux connect` processes fed through a fifo by a background writer that keeps
# their stdin open until every answer is in (the daemon cancels what is in flight at EOF). A
# descriptor held by this shell instead would leak into every later child and keep fifos open.
declare -A s_pid s_writer s_expect
# session_open TAG < INPUT: starts the session with INPUT (not in a pipeline: the bookkeeping
# must happen in this shell).
session_open() {
  local tag=$1
  mkfifo "$tmp/session-$tag.fifo"
  "$mcpmux" --socket "$sock" connect <"$tmp/session-$tag.fifo" >"$tmp/session-$tag.out" &
  s_pid[$tag]=$!
  bg_pids+=("$!")
  cat >"$tmp/session-$tag.in"
  {
    cat "$tmp/session-$tag.in"
    while [[ -d $tmp && ! -e $tmp/session-$tag.done ]]; do sleep 0.1; done
  } >"$tmp/session-$tag.fifo" &
  s_writer[$tag]=$!
  bg_pids+=("$!")
  s_expect[$tag]=$(grep -c '"id":' "$tmp/session-$tag.in")
  connects=$((connects + 1))
}
# session_send TAG < LINES: more input for an open session (its writer still holds the fifo
# open; short lines are written whole).
session_send() { cat >"$tmp/session-$1.fifo"; }
# session_close TAG: waits for every answer, ends stdin, waits for `mcpmux connect` to exit 0.
session_close() {
  local tag=$1 rc=0
  wait_for "session $tag: ${s_expect[$tag]} answers" 120 \
    has_answers "$tmp/session-$tag.out" "${s_expect[$tag]}"
  touch "$tmp/session-$tag.done"
  wait "${s_writer[$tag]}" || true
  wait_for "session $tag: mcpmux connect to end after EOF" 60 eval "! kill -0 ${s_pid[$tag]}"
  wait "${s_pid[$tag]}" || rc=$?
  ((rc == 0)) || fail "mcpmux connect session $tag exited $rc"
}
# check_session TAG PYTHON: runs PYTHON with `by_id` (id -> response) and `notes` (notifications).
check_session() {
  python3 - "$tmp/session-$1.out" <<EOF || fail "session $1: wrong answers (see $tmp/session-$1.out)"
import json, sys
by_id, notes = {}, []
for line in open(sys.argv[1]):
    m = json.loads(line)
    (by_id.__setitem__(m["id"], m) if "id" in m else notes.append(m))
assert by_id[1]["result"]["protocolVersion"] == "2025-11-25", by_id.get(1)
$2
EOF
}

# echo_start TAG TOOL N: a session calling TOOL (an echo) N times; echo_end TAG checks them all.
declare -A e_tool e_n
echo_start() {
  local tag=$1 tool=$2 n=$3 i
  e_tool[$tag]=$tool e_n[$tag]=$n
  session_open "$tag" < <(
    init_lines
    echo '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
    for ((i = 0; i < n; i++)); do
      printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"text":"%s-%d"}}}\n' \
        $((100 + i)) "$tool" "$tag" "$i"
    done
  )
}
echo_end() {
  local tag=$1
  session_close "$tag"
  check_session "$tag" "
tool, tag, n = '${e_tool[$tag]}', '$tag', ${e_n[$tag]}
assert tool in [t['name'] for t in by_id[2]['result']['tools']], 'tool not listed'
for i in range(n):
    r = by_id[100 + i]['result']
    assert not r.get('isError') and r['structuredContent']['echo'] == f'{tag}-{i}', r"
  calls=$((calls + e_n[$tag]))
  requests=$((requests + 2))
}
echo_session() {
  echo_start "$@"
  echo_end "$1"
}

# The rest of MCP through the mux, on alpha: each request must get a result, and the
# subscription, the log level and the progress token must bring their notifications.
features_session() {
  local tag=$1
  session_open "$tag" < <(
    init_lines
    printf '%s\n' \
      '{"jsonrpc":"2.0","id":2,"method":"resources/list"}' \
      '{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"fake://alpha/r0"}}' \
      '{"jsonrpc":"2.0","id":4,"method":"resources/templates/list"}' \
      '{"jsonrpc":"2.0","id":5,"method":"prompts/list"}' \
      '{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"alpha__prompt_0","arguments":{"topic":"leaks"}}}' \
      '{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"fake://alpha/r0"}}' \
      '{"jsonrpc":"2.0","id":8,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"alpha__prompt_0"},"argument":{"name":"topic","value":"v"}}}' \
      '{"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"debug"}}' \
      '{"jsonrpc":"2.0","id":10,"method":"ping"}'
  )
  wait_for "session $tag: 10 answers" 120 has_answers "$tmp/session-$tag.out" 10
  # Sent once the subscription and the log level are in place.
  printf '%s\n' \
    '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"alpha__touch","arguments":{"uri":"fake://alpha/r0"}}}' \
    '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"alpha__log","arguments":{"level":"info","text":"hello"}}}' \
    '{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"alpha__progress","arguments":{"steps":3},"_meta":{"progressToken":"pt"}}}' \
    '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"alpha__change_lists","arguments":{}}}' \
    '{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"alpha__list_changed","arguments":{}}}' |
    session_send "$tag"
  wait_for "session $tag: 15 answers" 120 has_answers "$tmp/session-$tag.out" 15
  # Requests run concurrently: unsubscribing only once the touch is answered.
  echo '{"jsonrpc":"2.0","id":16,"method":"resources/unsubscribe","params":{"uri":"fake://alpha/r0"}}' |
    session_send "$tag"
  s_expect[$tag]=16
  session_close "$tag"
  check_session "$tag" "
for i in range(2, 17):
    assert 'result' in by_id[i] and not by_id[i]['result'].get('isError'), by_id.get(i)
methods = [n['method'] for n in notes]
for m in ('notifications/resources/updated', 'notifications/message', 'notifications/progress'):
    assert m in methods, (m, methods)"
  calls=$((calls + 5))
  requests=$((requests + 10))
}

# slow_disconnect: a client whose tools/call is running on alpha is SIGKILLed; alpha must then
# receive notifications/cancelled for it.
slow_disconnect() {
  local tag=$1 before
  before=$(grep -c '"method":"notifications/cancelled"' "$tmp/alpha.in" || true)
  session_open "$tag" < <(
    init_lines
    echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__slow","arguments":{"ms":30000}}}'
  )
  wait_for "alpha to receive the slow call of $tag" 60 \
    eval "(( \$(grep -c '\"name\":\"slow\"' '$tmp/alpha.in') > $disconnects ))"
  {
    kill -9 "${s_pid[$tag]}"
    wait "${s_pid[$tag]}"
  } 2>/dev/null || true
  touch "$tmp/session-$tag.done"
  wait "${s_writer[$tag]}" 2>/dev/null || true
  disconnects=$((disconnects + 1))
  wait_for "alpha to receive notifications/cancelled for the call of $tag" 60 \
    eval "(( \$(grep -c '\"method\":\"notifications/cancelled\"' '$tmp/alpha.in') > $before ))"
}

# server_table NAME ARGS... [-- EXTRA_LINES...]
server_table() {
  local name=$1 a args="" extra=""
  shift
  while (($#)); do
    a=$1
    shift
    [[ $a == -- ]] && break
    args+="${args:+, }\"$a\""
  done
  for a in "$@"; do extra+="$a"$'\n'; done
  printf '[servers.%s]\ncommand = "%s"\nargs = [%s]\n%s\n' "$name" "$fake" "$args" "$extra"
}
daemon_section() {
  printf '[daemon]\ntimeout_ms = 60000\nlog_level = "debug"\nreconnect_max_ms = 1000\n\n'
}
alpha_table() {  # alpha: every feature; logs what it receives
  server_table alpha --name alpha --resources 2 --templates --prompts 1 --subscribe \
    --completions --logging "$@" --log "$tmp/alpha.in"
}
# Written to a temporary file and renamed: the daemon watches the directory (inotify) and must
# never read a half-written file.
write_config() {
  cat >"$conf.tmp"
  mv "$conf.tmp" "$conf"
}

# ---- version 1: alpha, beta (SIGKILLed, crashed), flaky (exits after every handshake)
{
  daemon_section
  alpha_table
  server_table beta --name beta -- "retry_calls = false"
  server_table flaky --name flaky --exit-after-init
} | write_config

# mcpmuxd carries libstdc++ in itself (daemon/meson.build): somalloc=NONE has valgrind replace
# its operator new and delete there too, besides libc's malloc. (libstdc++'s exception pool, 72,704
# bytes allocated once, then shows as still reachable: its release hook is not exported.)
# shellcheck disable=SC2054 # the commas are inside option values
vg_args=(
  --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible
  --soname-synonyms=somalloc=NONE
  --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --track-fds=yes
  --child-silent-after-fork=yes --num-callers=40 --vgdb=no --log-file="$vglog"
)
[[ -f $supp ]] && vg_args+=(--suppressions="$supp")

step "starting mcpmuxd under valgrind memcheck ($tmp)"
MCPMUX_VG_MARK=$tmp valgrind "${vg_args[@]}" "$mcpmuxd" --config "$conf" --socket "$sock" --log-level debug \
  </dev/null >"$dlog" 2>&1 &
daemon_pid=$!

wait_for "the daemon to answer on $sock" 120 status_json
wait_for "alpha and beta ready" 90 all_ready alpha beta
step "daemon up (pid $daemon_pid); alpha and beta ready"

# ---- one-shot CLI clients
for i in $(seq 1 10); do call alpha__echo "{\"text\":\"cli-a$i\"}" "cli-a$i"; done
for i in $(seq 1 6); do call beta__echo "{\"text\":\"cli-b$i\"}" "cli-b$i"; done
call_fails alpha__error_result '{}'
call_fails beta__rpc_error '{}'
call_fails nosuch__tool '{}'
for c in tools status "logs beta"; do
  # shellcheck disable=SC2086
  cli $c >/dev/null || fail "mcpmux $c"
  connects=$((connects + 1))
done

# ---- sessions, one after the other, then three at once
echo_session s1 alpha__echo 20
echo_session s2 beta__echo 15
features_session f1
echo_start p1 alpha__echo 20
echo_start p2 beta__echo 20
echo_start p3 alpha__echo 20
echo_end p1
echo_end p2
echo_end p3
step "$calls tools/call answered"

# ---- clients killed while their call is in flight
slow_disconnect k1
slow_disconnect k2
step "$disconnects clients killed mid-call; alpha got notifications/cancelled for each"

# ---- mcpmux restart
for round in 1 2; do
  for s in alpha beta; do
    old=$(server_pid "$s")
    cli restart "$s" >/dev/null || fail "mcpmux restart $s"
    connects=$((connects + 1))
    restarts=$((restarts + 1))
    wait_for "$s ready again after mcpmux restart" 90 is_ready "$s" "$old"
  done
  call alpha__echo "{\"text\":\"restart-$round\"}" "restart-$round"
done
step "$restarts restarts"

# ---- SIGKILL of an upstream, and a tool that crashes its server mid-call
for round in 1 2 3; do
  old=$(server_pid beta)
  kill -9 "$old"
  kills=$((kills + 1))
  wait_for "beta back after SIGKILL of pid $old" 90 is_ready beta "$old"
  call beta__echo "{\"text\":\"after-kill-$round\"}" "after-kill-$round"
done
for round in 1 2; do
  old=$(server_pid beta)
  call_fails beta__crash '{"code":7}'
  crashes=$((crashes + 1))
  wait_for "beta back after crashing" 90 is_ready beta "$old"
  call beta__echo "{\"text\":\"after-crash-$round\"}" "after-crash-$round"
done
step "beta survived $kills SIGKILLs and $crashes crashes"

# ---- reload 1 (mcpmux reload): flaky removed, delta added (per-client), beta changed
{
  daemon_section
  alpha_table
  server_table beta --name beta --instructions "beta v2" -- "retry_calls = false"
  server_table delta --name delta --stderr-lines 3 -- 'isolation = "per-client"'
} | write_config
cli reload >"$tmp/reload1.out" 2>&1 || fail "mcpmux reload: $(cat "$tmp/reload1.out")"
connects=$((connects + 1))
reloads=$((reloads + 1))
wait_for "servers alpha, beta, delta after reload 1" 60 servers_are alpha beta delta
wait_for "beta and delta ready after reload 1" 90 all_ready beta delta
echo_start d1 delta__echo 8
echo_start d2 delta__echo 8
echo_end d1
echo_end d2
call delta__echo '{"text":"isolated"}' isolated
step "reload 1 (added delta per-client, removed flaky, changed beta)"

# ---- an invalid file is rejected and changes nothing
{
  daemon_section
  server_table alpha --name alpha -- "no_such_key = 1"
} | write_config
rc=0
cli reload >"$tmp/reload-bad.out" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || fail "mcpmux reload of an invalid file exited $rc: $(cat "$tmp/reload-bad.out")"
connects=$((connects + 1))
bad_reloads=$((bad_reloads + 1))
servers_are alpha beta delta || fail "the invalid reload changed the servers"

# ---- reload 2 (SIGHUP): alpha changed, flaky back, delta removed
{
  daemon_section
  alpha_table --instructions "alpha v2"
  server_table beta --name beta --instructions "beta v2" -- "retry_calls = false"
  server_table flaky --name flaky --exit-after-init
} | write_config
kill -HUP "$daemon_pid"
reloads=$((reloads + 1))
wait_for "servers alpha, beta, flaky after reload 2" 60 servers_are alpha beta flaky
wait_for "alpha ready after reload 2" 90 is_ready alpha
features_session f2
step "reload 2 (changed alpha, added flaky, removed delta)"

# ---- reload 3 (inotify only: the file is saved, nobody asks): flaky removed, gamma added
{
  daemon_section
  alpha_table --instructions "alpha v2"
  server_table beta --name beta --instructions "beta v2" -- "retry_calls = false"
  server_table gamma --name gamma
} | write_config
reloads=$((reloads + 1))
wait_for "servers alpha, beta, gamma after reload 3" 60 servers_are alpha beta gamma
wait_for "gamma ready after reload 3" 90 is_ready gamma
echo_start q1 alpha__echo 15
echo_start q2 beta__echo 15
echo_start q3 gamma__echo 15
echo_end q1
echo_end q2
echo_end q3
step "reload 3 (removed flaky, added gamma)"

# ---- graceful stop
[[ -n $(marked_processes) ]] || fail "no server process found through MCPMUX_VG_MARK"
cli status >/dev/null || fail "mcpmux status"
connects=$((connects + 1))
step "SIGTERM; waiting for the exit and valgrind's leak check"
kill -TERM "$daemon_pid"
rc=0
wait "$daemon_pid" || rc=$?
daemon_pid=""
elapsed=$(($(date +%s) - started))

echo
echo "== valgrind memcheck summary (full log: $vglog)"
grep -E 'ERROR SUMMARY|definitely lost|indirectly lost|possibly lost|still reachable|suppressed:|All heap blocks were freed|total heap usage|FILE DESCRIPTORS' \
  "$vglog" | sed 's/^==[0-9]*== */  /'
echo "== daemon exit status $rc; driven: $calls tools/call answered, $requests other requests," \
  "$connects client connections, $disconnects clients killed mid-call, $restarts restarts," \
  "$reloads reloads (+$bad_reloads invalid, rejected), $kills upstreams SIGKILLed," \
  "$crashes upstream crashes; ${elapsed}s"

problems=()
((rc == 0)) || problems+=("the daemon exited $rc (99 = valgrind found errors)")
grep -q 'ERROR SUMMARY: 0 errors' "$vglog" || problems+=("valgrind reported errors")
if ! grep -q 'All heap blocks were freed' "$vglog"; then
  grep -q 'definitely lost: 0 bytes' "$vglog" || problems+=("definitely lost bytes")
  grep -q 'indirectly lost: 0 bytes' "$vglog" || problems+=("indirectly lost bytes")
fi
grep -q 'mcpmuxd: stopped' "$dlog" || problems+=("the daemon log does not end with 'stopped'")
# --track-fds=yes: every descriptor the daemon opened is closed by its exit (the ones it inherited
# from this script, and valgrind's own log, are listed "<inherited from parent>").
grep -q 'FILE DESCRIPTORS:' "$vglog" || problems+=("no FILE DESCRIPTORS report in the valgrind log")
leaked_fds=$(awk '
  /Open (file descriptor|AF_UNIX socket|AF_INET6? socket|pf-[0-9]+ socket) / { open = $0; next }
  open != "" && NF > 1 { if ($0 !~ /inherited from parent/) { n++; print open > "/dev/stderr" } open = "" }
  END { print n + 0 }' "$vglog" 2>"$tmp/leaked-fds.txt")
((leaked_fds == 0)) ||
  problems+=("$leaked_fds descriptors the daemon opened are open at exit: $(cat "$tmp/leaked-fds.txt")")
# Children are reaped before the daemon exits; allow a moment all the same.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  no_marked_processes && break
  sleep 0.2
done
left=$(marked_processes | tr '\n' ' ')
[[ -z $left ]] || problems+=("server processes outlived the daemon: $left")
if ((${#problems[@]})); then
  failed=1
  echo "--- valgrind log (without its warnings)"
  grep -v '^--[0-9]*--' "$vglog" | sed 's/^==[0-9]*== //' | tail -n 200
  for p in "${problems[@]}"; do echo "FAIL: $p"; done
  echo "FAIL: valgrind daemon run"
  exit 1
fi
echo "PASS: valgrind daemon run: exit 0, 0 errors, no leaks, no descriptor or process left behind"
