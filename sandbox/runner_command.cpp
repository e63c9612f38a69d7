// Node runs the programs: Debian keeps it (security updates through the distribution), the MCP
// servers users run need it anyway, its V8 is the engine the models' JavaScript is written for,
// and its worker threads give what the runner needs to stop a program cleanly (terminate() on a
// loop, a per-worker heap limit that ends the worker, not the process). Debian 12 has no
// embeddable engine (no quickjs package), and embedding one in the daemon would put untrusted
// code in its address space.
#include "sandbox/runner_command.hpp"

namespace mcpmux {

std::vector<std::string> runner_command(const runner_launch& launch) {
  std::vector<std::string> a{launch.helper, "enter", "--runner"};
  for (const auto& f : launch.cgroup_procs) a.insert(a.end(), {"--cgroup", f});
  a.insert(a.end(),
           {"--files", std::to_string(launch.files), "--cpu", std::to_string(launch.cpu_seconds),
            "--address-space", std::to_string(launch.address_space_mb), "--", launch.bwrap});
  // Every namespace, the network's too (nothing but loopback, and nothing listens there); no
  // environment of the daemon's (NODE_OPTIONS would load code); a root that holds only what
  // the bind mounts below put in it: no /home, /etc, /tmp, /run, no mcpmux state, no sockets.
  a.insert(a.end(), {"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                     "--clearenv", "--setenv", "PATH", "/usr/bin"});
  for (const auto& dir : launch.library_dirs) a.insert(a.end(), {"--ro-bind-try", dir, dir});
  for (const auto& file : {launch.node, launch.script, launch.helper})
    a.insert(a.end(), {"--ro-bind", file, file});
  // The sandbox's own PID namespace's /proc (Node reads /proc/self), /dev's null, zero, random.
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--chdir", "/", "--"});
  a.insert(a.end(), {launch.helper, "lock", "--", launch.node,
                     "--max-old-space-size=" + std::to_string(launch.supervisor_mb), launch.script,
                     "--heap-mb", std::to_string(launch.heap_mb)});
  return a;
}

}  // namespace mcpmux
