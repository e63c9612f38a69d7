#!/usr/bin/env bash
# What a user keeps from an install (docs/install.md), proved as far as a machine without a
# running systemd allows:
#   1. `meson install` into a DESTDIR (default prefix) puts every file in its place;
#   2. an install with --prefix ~/.local puts the units where the user manager looks
#      (~/.local/share/systemd/user), pointing at ~/.local/bin, and they pass systemd-analyze verify;
#   3. scripts/package builds a .deb that lintian finds no error in;
#   4. the .deb installs with dpkg -i, its units pass systemd-analyze verify, its man pages are
#      found by man, and its /usr/bin/mcpmuxd under systemd-socket-activate answers
#      /usr/bin/mcpmux tools; then dpkg -r removes every file.
# Needs build/ (scripts/build), FAKE_MCP_SERVER, and root (or sudo) for dpkg.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
: "${FAKE_MCP_SERVER:?}"
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo -n"

tmp=$(mktemp -d)
activator=""
installed=0
cleanup() {
  [[ -z $activator ]] || { kill "$activator" 2>/dev/null; wait "$activator" 2>/dev/null || true; }
  ((installed == 0)) || $sudo dpkg -r mcpmux >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
step() { echo "-- $* ($SECONDS s)"; }

# every_file ROOT PREFIX UNITDIR: the files of an install under ROOT, the units naming PREFIX/bin.
every_file() {
  local root=$1 prefix=$2 units=$3 f
  for f in bin/mcpmux bin/mcpmuxd libexec/mcpmux/mcpmux-sandbox; do
    [[ -x $root$prefix/$f ]] || fail "$root$prefix/$f is missing or not executable"
  done
  f=libexec/mcpmux/runner.mjs  # code mode's runner (not yet used by the daemon)
  [[ -f $root$prefix/$f ]] || fail "$root$prefix/$f is missing"
  for f in share/man/man1/mcpmux.1 share/man/man8/mcpmuxd.8 share/man/man5/mcpmux.toml.5; do
    [[ -f $root$prefix/$f || -f $root$prefix/$f.gz ]] || fail "$root$prefix/$f is missing"
  done
  for f in share/bash-completion/completions/mcpmux share/zsh/vendor-completions/_mcpmux \
    share/fish/vendor_completions.d/mcpmux.fish; do
    [[ -f $root$prefix/$f ]] || fail "$root$prefix/$f is missing"
  done
  [[ -f $root$units/mcpmuxd.socket ]] || fail "$root$units/mcpmuxd.socket is missing"
  grep -qx "ExecStart=$prefix/bin/mcpmuxd" "$root$units/mcpmuxd.service" ||
    fail "$root$units/mcpmuxd.service does not start $prefix/bin/mcpmuxd"
}

# verify UNIT...: systemd-analyze verify, as the user manager would load them (it needs a runtime
# directory; the binaries they start must exist).
verify() {
  [[ -d $tmp/xdg-runtime ]] || mkdir -m 0700 "$tmp/xdg-runtime"
  XDG_RUNTIME_DIR=$tmp/xdg-runtime systemd-analyze verify --user "$@" || fail "verify $*"
}

step "DESTDIR install, default prefix"
[[ $(meson introspect --buildoptions build | python3 -c \
  'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"][0])') \
  == /usr/local ]] || fail "build/ is not configured with the default prefix"
meson install -C build --destdir "$tmp/dest" --quiet >/dev/null
every_file "$tmp/dest" /usr/local /usr/local/lib/systemd/user

step "scripts/package"
deb=$(scripts/package)
[[ -f $deb ]] || fail "scripts/package made no .deb"

step "--prefix ~/.local install"
# The package's build directory (meson's defaults, what a user builds), given the user's prefix:
# the prefix is in no compile command, so nothing compiles again; scripts/package sets /usr back.
home=$tmp/home
meson configure "$src/build-package" --prefix "$home/.local" >/dev/null
meson install -C "$src/build-package" --quiet >/dev/null
meson configure "$src/build-package" --prefix /usr >/dev/null
every_file "" "$home/.local" "$home/.local/share/systemd/user"
verify "$home/.local/share/systemd/user/mcpmuxd.socket" \
  "$home/.local/share/systemd/user/mcpmuxd.service"
step "lintian"
lintian --tag-display-limit 0 "$deb" 2>/dev/null | tee "$tmp/lintian.txt"
! grep -q '^E:' "$tmp/lintian.txt" || fail "lintian reports errors"

step "dpkg -i"
# The test removes what it installs: a package the user installed is not the test's to remove.
if dpkg-query -W -f='${Status}' mcpmux 2>/dev/null | grep -q 'install ok installed'; then
  fail "mcpmux is installed here already; remove it (dpkg -r mcpmux) to run this test"
  exit 1
fi
installed=1
$sudo dpkg -i "$deb" >/dev/null
every_file "" /usr /usr/lib/systemd/user
verify /usr/lib/systemd/user/mcpmuxd.socket /usr/lib/systemd/user/mcpmuxd.service
[[ $(man -w mcpmux.toml) == /usr/share/man/man5/mcpmux.toml.5.gz ]] || fail "man mcpmux.toml"
MANWIDTH=80 man mcpmuxd 2>/dev/null | grep -q 'systemctl --user enable --now mcpmuxd.socket' ||
  fail "man mcpmuxd does not read"

step "socket activation of the installed daemon"
# As the user manager starts it: a listening socket handed over (LISTEN_FDS), the config in the
# user's home, no other environment of ours.
user=$tmp/user
# (systemd-socket-activate passes on HOME, PATH, USER and TERM; the rest with -E.) The socket
# where mcpmuxd.socket puts it: %t/mcpmux/mcpmux.sock.
mkdir -p "$user/.config/mcpmux" && mkdir -m 0700 "$tmp/run" "$tmp/run/mcpmux"
printf '[servers.fake]\ncommand = "%s"\n' "$FAKE_MCP_SERVER" >"$user/.config/mcpmux/config.toml"
sock=$tmp/run/mcpmux/mcpmux.sock
env -i HOME="$user" PATH=/usr/bin:/bin systemd-socket-activate -l "$sock" \
  -E XDG_RUNTIME_DIR="$tmp/run" /usr/bin/mcpmuxd >"$tmp/daemon.log" 2>&1 &
activator=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done
# The first answer may come before the server is up (no cache yet, startup_wait_ms): asked again
# until it lists the server's tools, for at most 10 s.
for _ in $(seq 50); do
  tools=$(env -i HOME="$user" PATH=/usr/bin:/bin /usr/bin/mcpmux --socket "$sock" tools 2>&1) ||
    break
  grep -q '^fake__echo ' <<<"$tools" && break
  sleep 0.2
done
grep -q '^fake__echo ' <<<"$tools" ||
  { cat "$tmp/daemon.log"; fail "mcpmux tools does not list fake__echo: $tools"; }
# The installed daemon finds its helper in libexec and runs the server in its sandbox.
env -i HOME="$user" PATH=/usr/bin:/bin /usr/bin/mcpmux --socket "$sock" status --json |
  python3 -c 'import json,sys; s=[x for x in json.load(sys.stdin)["servers"] if x["name"]=="fake"][0]
sys.exit(0 if s["sandbox"]["sandboxed"] else 1)' ||
  { cat "$tmp/daemon.log"; fail "the installed daemon did not sandbox its server"; }
grep -q "listening on $sock (socket activation)" "$tmp/daemon.log" ||
  { cat "$tmp/daemon.log"; fail "mcpmuxd did not take the socket systemd-socket-activate made"; }
kill "$activator" && wait "$activator" 2>/dev/null || true
activator=""

step "socket activation without XDG_RUNTIME_DIR"
# The daemon listens on the socket it was handed, whatever its own rule would choose without the
# runtime directory, and says so: in its log and in the record that bare clients read.
rm -f "$sock"
env -i HOME="$user" PATH=/usr/bin:/bin systemd-socket-activate -l "$sock" \
  /usr/bin/mcpmuxd >"$tmp/daemon2.log" 2>&1 &
activator=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done
env -i HOME="$user" PATH=/usr/bin:/bin /usr/bin/mcpmux --socket "$sock" status >/dev/null ||
  fail "the activated daemon does not answer on $sock"
grep -q "listening on $sock (socket activation)" "$tmp/daemon2.log" ||
  { cat "$tmp/daemon2.log"; fail "mcpmuxd says it listens elsewhere than the socket it was handed"; }
grep -qx "$sock" "$user/.local/state/mcpmux/daemon-socket" ||
  fail "the record names $(cat "$user/.local/state/mcpmux/daemon-socket" 2>&1), not $sock"
kill "$activator" && wait "$activator" 2>/dev/null || true
activator=""

step "dpkg -r"
$sudo dpkg -r mcpmux >/dev/null
installed=0
for f in /usr/bin/mcpmuxd /usr/bin/mcpmux /usr/lib/systemd/user/mcpmuxd.service \
  /usr/share/man/man1/mcpmux.1.gz /usr/share/bash-completion/completions/mcpmux; do
  [[ ! -e $f ]] || fail "$f is left after dpkg -r"
done

step "done"
((failures == 0)) && echo "install: all passed"
((failures == 0))
