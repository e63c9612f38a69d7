#!/usr/bin/env python3
"""What the sandbox costs a server's start: the same stdio server (the fake server) restarted N
times under sandbox = "off" and "default", timed from `mcpmux/restart` to ready in status (the
daemon's spawn, bubblewrap and the handshake), p50/min/max printed. Calls cost the same in and
out of the sandbox (the same pipes; bench_suite's rows measure them).
usage: tests/bench/sandbox_start.py [--build DIR] [-n N]"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time


def rpc(sock_path, method, params):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(sock_path)
        s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return json.loads(buf)


def server_entry(sock_path):
    st = rpc(sock_path, "mcpmux/status", {})["result"]
    return next(s for s in st["servers"] if s["name"] == "fake")


def measure(build, mode, n):
    with tempfile.TemporaryDirectory(prefix="mcpmux-bench-sbx-") as d:
        cfg = os.path.join(d, "config.toml")
        with open(cfg, "w") as f:
            f.write(f'[servers.fake]\ncommand = "{build}/tests/fake_mcp_server"\nsandbox = "{mode}"\nera = "legacy"\n')
        sock = os.path.join(d, "mcpmux.sock")
        env = dict(os.environ, XDG_RUNTIME_DIR=d, XDG_STATE_HOME=d + "/state",
                   XDG_CACHE_HOME=d + "/cache", XDG_CONFIG_HOME=d + "/config")
        env.pop("MCPMUX_SANDBOX", None)
        daemon = subprocess.Popen([f"{build}/daemon/mcpmuxd", "--config", cfg, "--socket", sock,
                                   "--log-level", "warn"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    if server_entry(sock)["state"] == "ready":
                        break
                except (OSError, ValueError, StopIteration, KeyError):
                    pass
                time.sleep(0.01)
            times = []
            for _ in range(n):
                before = server_entry(sock)["pid"]
                t0 = time.monotonic()
                rpc(sock, "mcpmux/restart", {"server": "fake"})
                while True:
                    e = server_entry(sock)
                    if e["state"] == "ready" and e["pid"] != before:
                        break
                    time.sleep(0.001)
                times.append((time.monotonic() - t0) * 1000)
            sandboxed = server_entry(sock).get("sandbox", {}).get("sandboxed", False)
            return times, sandboxed
        finally:
            daemon.terminate()
            daemon.wait(10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("-n", type=int, default=20)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    print(f"server start, restart to ready, {a.n} starts each (fake server, legacy era):")
    for mode in ("off", "default"):
        t, sandboxed = measure(build, mode, a.n)
        print(f"  sandbox = {mode:8} p50 {statistics.median(t):6.1f} ms  min {min(t):6.1f}  "
              f"max {max(t):6.1f}  (sandboxed: {sandboxed})")


if __name__ == "__main__":
    main()
