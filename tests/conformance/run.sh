#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) on both sides of mcpmux:
#   server side: a target (stdio, prefix "") behind mcpmuxd, the suite against the daemon's
#                Streamable HTTP endpoint ([daemon] http) at http://127.0.0.1:PORT/mcp, in three
#                runs: the legacy target_server.mjs with the 2025-11-25 suite; the same target
#                with every 2026-07-28 scenario (a modern client, a legacy server: mcpmux
#                bridges); target_server_modern.mjs (v2 SDK, modern only) with every 2026-07-28
#                scenario. The 2026 runs compare with baselines of expected failures
#                (expected-2026-*.yml), each entry with its reason. Then the tasks extension's
#                scenarios with target_server_tasks.mjs behind mcpmuxd, over stdio and over
#                Streamable HTTP;
#   client side: the suite's scenario servers as a `type = "http"` upstream of mcpmuxd, driven
#                over the Unix socket by client_wrapper.mjs: the 2025-11-25 scenarios and the
#                non-auth 2026-07-28 ones (mcpmux's HTTP client in the modern era), and the
#                authorization (auth/*) scenarios of every revision (mcpmux's OAuth client).
# Results go to build/conformance/. Exit status non-zero on any failed check.
# Needs: a built tree (scripts/build) or MCPMUXD/MCPMUX, and npm; the suite runs on the Node 22
# binary of the `node` npm package (the system Node may be 20).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

MCPMUXD=${MCPMUXD:-$repo/build/daemon/mcpmuxd}
MCPMUX=${MCPMUX:-$repo/build/daemon/mcpmux}
out=${CONFORMANCE_OUT:-$repo/build/conformance}
server_suite=${CONFORMANCE_SERVER_SUITE:-active}
client_scenarios=(initialize tools_call sse-retry elicitation-sep1034-client-defaults)
# The 2026-07-28 client scenarios: mcpmux's HTTP client in the modern era (the socket client in
# front of it speaks 2025-11-25: mcpmux bridges).
client_scenarios_2026=(request-metadata http-standard-headers http-custom-headers
  http-invalid-tool-headers sep-2322-client-request-state json-schema-ref-no-deref
  json-schema-2020-12-preservation tools_call)
export MCPMUXD MCPMUX

for bin in "$MCPMUXD" "$MCPMUX"; do
  [[ -x $bin ]] || { echo "conformance: $bin not found (run scripts/build, or set MCPMUXD/MCPMUX)" >&2; exit 2; }
done

echo "== conformance: npm ci (tests/conformance)"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
node22="$here/node_modules/.bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
"$node22" --version | grep -q '^v22\.' || { echo "conformance: $node22 is not Node 22" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out/server" "$out/client"
work=$(mktemp -d /tmp/mcpmux-conformance.XXXXXX)  # short path: Unix socket names are limited
daemon_pid=""
cleanup() {
  if [[ -n ${target_pid:-} ]]; then kill -TERM "$target_pid" 2>/dev/null || true; fi
  if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# ---------------------------------------------------------------- server side
status=0
toml() { "$node22" -e 'process.stdout.write(JSON.stringify(process.argv[1]))' "$1"; }

free_port() {
  "$node22" -e '
    const s = require("net").createServer();
    s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}
target_pid=""

# server_run NAME TARGET SUITE-ARGS... : mcpmuxd with TARGET behind it, the suite against /mcp.
# TARGET is a server script run over stdio, or http:SCRIPT for one serving Streamable HTTP
# (`SCRIPT --http PORT`) reached as a `type = "http"` server. SUITE-ARGS starting with
# `--each SCENARIO...  --` run the suite once per scenario (the extension scenarios have no
# suite of their own).
server_run() {
  local name=$1 target=$2
  shift 2
  local dir="$out/server/$name"
  mkdir -p "$dir"
  local port
  port=$(free_port)
  local socket="$work/$name.sock"
  local server_table
  if [[ $target == http:* ]]; then
    local target_port
    target_port=$(free_port)
    "$node22" "$here/${target#http:}" --http "$target_port" >"$dir/target.log" 2>&1 &
    target_pid=$!
    server_table="type = \"http\"
url = \"http://127.0.0.1:$target_port/mcp\""
  else
    server_table="command = $(toml "$node22")
args = [$(toml "$here/$target")]"
  fi
  cat >"$dir/mcpmuxd-config.toml" <<EOF
[daemon]
socket = $(toml "$socket")
http = "127.0.0.1:$port"
http_auth = "none"  # the suite sends no bearer token
log_level = "debug"
startup_wait_ms = 10000

[servers.target]
$server_table
prefix = ""
# The scenarios add tools and prompts at run time to test list changes; under the default
# on_change (quarantine) mcpmux would hold them back until approved.
on_change = "accept"
EOF
  echo "== conformance [$name]: mcpmuxd with $target behind it, HTTP endpoint on 127.0.0.1:$port"
  XDG_CACHE_HOME="$work/cache-$name" XDG_STATE_HOME="$work/state-$name" "$MCPMUXD" --config "$dir/mcpmuxd-config.toml" \
    >"$dir/mcpmuxd.log" 2>&1 &
  daemon_pid=$!
  local state=""
  for _ in $(seq 150); do
    if ! kill -0 "$daemon_pid" 2>/dev/null; then
      echo "conformance: mcpmuxd exited at start; its log:" >&2
      cat "$dir/mcpmuxd.log" >&2
      daemon_pid=""
      status=1
      return 0
    fi
    state=$("$MCPMUX" --socket "$socket" status --json 2>/dev/null |
      "$node22" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{
        console.log(JSON.parse(s).servers.find(x=>x.name==="target")?.state??"")}catch{console.log("")}})') || true
    [[ $state == ready ]] && break
    sleep 0.2
  done
  local server_rc=0
  if [[ $state != ready ]]; then
    echo "conformance: the target did not become ready behind mcpmuxd (state: ${state:-none}); log:" >&2
    cat "$dir/mcpmuxd.log" >&2
    server_rc=1
  else
    echo "== conformance [$name]: server scenarios ($*) against http://127.0.0.1:$port/mcp"
    if [[ ${1:-} == --each ]]; then
      shift
      local scenarios=()
      while (($# > 0)) && [[ $1 != -- ]]; do scenarios+=("$1"); shift; done
      shift
      : >"$dir/suite.log"
      for scenario in "${scenarios[@]}"; do
        timeout 300 "$node22" "$suite" server --url "http://127.0.0.1:$port/mcp" \
          --scenario "$scenario" "$@" -o "$dir" >>"$dir/suite.log" 2>&1 || server_rc=$?
      done
      sed 's/\x1b\[[0-9;]*m//g' "$dir/suite.log" | grep -E '^Passed: ' |
        awk -v n="${#scenarios[@]}" '{split($2, a, "/"); p += a[1]; t += a[2]}
          END {printf "%d scenarios: %d/%d checks passed\n", n, p, t}'
    else
      timeout 900 "$node22" "$suite" server --url "http://127.0.0.1:$port/mcp" "$@" \
        -o "$dir" >"$dir/suite.log" 2>&1 || server_rc=$?
      sed -n '/=== SUMMARY ===/,$p' "$dir/suite.log" | sed 's/\x1b\[[0-9;]*m//g'
    fi
  fi
  if ((server_rc != 0)); then
    status=1
    echo "conformance [$name]: server scenarios FAILED (exit $server_rc); failed checks:"
    "$node22" -e '
      const fs = require("fs"), path = require("path");
      for (const d of fs.readdirSync(process.argv[1]).sort()) {
        const f = path.join(process.argv[1], d, "checks.json");
        if (!fs.existsSync(f)) continue;
        for (const c of JSON.parse(fs.readFileSync(f, "utf8")))
          if (c.status === "FAILURE") console.log(`  ${d.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "")}: ${c.id}: ${c.errorMessage ?? c.description}`);
      }' "$dir" || true
    echo "see $dir/suite.log, $dir/mcpmuxd.log"
  fi
  kill -TERM "$daemon_pid" 2>/dev/null || true
  local daemon_rc=0
  wait "$daemon_pid" || daemon_rc=$?
  daemon_pid=""
  if [[ -n $target_pid ]]; then
    kill -TERM "$target_pid" 2>/dev/null || true
    wait "$target_pid" 2>/dev/null || true
    target_pid=""
  fi
  if ((daemon_rc != 0)); then
    status=1
    echo "conformance [$name]: mcpmuxd exited with status $daemon_rc on SIGTERM"
  fi
}

# CONFORMANCE_ONLY=client skips the server side (a quicker run while working on the client).
if [[ ${CONFORMANCE_ONLY:-} != client ]]; then
server_run legacy-2025 target_server.mjs --suite "$server_suite"
server_run legacy-2026 target_server.mjs --suite all --spec-version 2026-07-28 \
  --expected-failures "$here/expected-2026-legacy-target.yml"
server_run modern-2026 target_server_modern.mjs --suite all --spec-version 2026-07-28 \
  --expected-failures "$here/expected-2026-modern-target.yml"
# The tasks extension (io.modelcontextprotocol/tasks) through mcpmux, with the target over stdio
# and over Streamable HTTP (mcpmux's HTTP client in the modern era).
mapfile -t task_scenarios < <("$node22" "$suite" list --server | sed -n 's/^  - \(tasks-[a-z-]*\).*/\1/p')
((${#task_scenarios[@]} >= 10)) || { echo "conformance: tasks scenarios missing from the suite" >&2; status=1; }
server_run tasks-stdio target_server_tasks.mjs --each "${task_scenarios[@]}" --
server_run tasks-http http:target_server_tasks.mjs --each "${task_scenarios[@]}" --
fi

# ---------------------------------------------------------------- client side
client_passed=0 client_failed=0
export MCPMUX_CONFORMANCE_LOG_DIR="$out/client"
command="$(printf '%q' "$node22") $(printf '%q' "$here/client_wrapper.mjs")"
# client_run SCENARIO [SUITE-ARGS...]
client_run() {
  local scenario=$1
  shift
  local log="$out/client/${scenario//\//_}.log"
  (($# > 1)) && log="$out/client/${scenario//\//_}-$2.log"
  echo "== conformance: client scenario $scenario $* (mcpmuxd as the MCP client)"
  local rc=0
  timeout 300 "$node22" "$suite" client --command "$command" --scenario "$scenario" "$@" \
    -o "$out/client" >"$log" 2>&1 || rc=$?
  sed 's/\x1b\[[0-9;]*m//g' "$log" |
    grep -E '^(Passed: |.*OVERALL: |  - |    (Error|Warning): |Client (exited|timed))' || true
  if ((rc == 0)) && grep -q 'OVERALL: PASSED' "$log"; then
    client_passed=$((client_passed + 1))
  else
    client_failed=$((client_failed + 1))
    status=1
    echo "see $log"
  fi
}
for scenario in "${client_scenarios[@]}"; do client_run "$scenario"; done
for scenario in "${client_scenarios_2026[@]}"; do
  client_run "$scenario" --spec-version 2026-07-28
done
# The authorization scenarios (issue 14): mcpmux's OAuth client, logged in as a person does it
# (`mcpmux auth login`, whose $BROWSER, browser.mjs, follows the authorization server's
# redirect), at every revision each scenario names. Not done: private_key_jwt
# (client-credentials-jwt), enterprise-managed authorization, DPoP and workload identity.
auth_not_done=" auth/client-credentials-jwt auth/enterprise-managed-authorization auth/dpop \
auth/dpop-nonce auth/wif-jwt-bearer "
while read -r scenario versions; do
  [[ $auth_not_done == *" $scenario "* ]] && continue
  IFS=, read -ra revisions <<<"${versions//[\[\]]/}"
  for revision in "${revisions[@]}"; do
    if [[ $revision == extension ]]; then
      client_run "$scenario"
    else
      client_run "$scenario" --spec-version "$revision"
    fi
  done
done < <("$node22" "$suite" list --client | sed -n 's/^  - \(auth\/[^ ]*\) \(\[.*\]\)$/\1 \2/p')
echo "client scenarios: $client_passed passed, $client_failed failed"

echo
if ((status == 0)); then echo "conformance: server suite and client scenarios passed"; else echo "conformance: FAILED"; fi
exit $status
