// The code-mode runner's sandbox as a command line: stricter than a server's (sandbox/bwrap.hpp)
// — no file but the engine, its libraries and the runner's own code, no network, no process
// but threads, no exec after the start — with its heap, CPU and open-file limits.
#pragma once

#include <string>
#include <vector>

namespace mcpmux {

/// What a runner's start needs: the programs (absolute paths) and its limits.
struct runner_launch {
  std::string bwrap;   ///< bubblewrap
  std::string helper;  ///< mcpmux-sandbox (joins the limits outside, locks exec inside)
  std::string node;    ///< the engine
  std::string script;  ///< runner.mjs
  /// The engine's shared libraries live under these (read-only; missing ones skipped). Not the
  /// user's data: the same files every program on the machine maps.
  std::vector<std::string> library_dirs{"/usr/lib", "/usr/lib64", "/lib", "/lib64",
                                        "/etc/ld.so.cache"};
  std::vector<std::string> cgroup_procs;  ///< `cgroup.procs` files (the sandbox's memory limit)
  unsigned heap_mb = 64;                  ///< the program's heap (its worker's old generation)
  unsigned supervisor_mb = 64;  ///< the runner's own heap: each tool result is parsed there
  unsigned cpu_seconds = 60;    ///< RLIMIT_CPU: the kernel's stop when the runner's own fails
  unsigned files = 64;          ///< RLIMIT_NOFILE
  /// RLIMIT_AS in MiB: array buffers (outside the heap) held without a cgroup; Node needs
  /// ~1.5 GiB of address space to start.
  unsigned address_space_mb = 2048;
};

/// `mcpmux-sandbox enter --runner … -- bwrap ARGS… -- mcpmux-sandbox lock -- node FLAGS
/// runner.mjs --heap-mb N`: the whole command the daemon spawns, stdin and stdout its NDJSON.
std::vector<std::string> runner_command(const runner_launch& launch);

}  // namespace mcpmux
