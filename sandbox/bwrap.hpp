// A sandbox policy as a bubblewrap command line, and the whole command that starts a sandboxed
// server through the mcpmux-sandbox helper.
#pragma once

#include <string>
#include <vector>

#include "sandbox/policy.hpp"

namespace mcpmux {

/// What a sandboxed start needs beyond the policy.
struct sandbox_launch {
  std::string bwrap;                      ///< bubblewrap's path
  std::string helper;                     ///< mcpmux-sandbox's path
  std::vector<std::string> cgroup_procs;  ///< `cgroup.procs` files the helper joins
  std::string proxy_socket;               ///< the daemon's proxy socket (network hosts)
  bool landlock = false;                  ///< the kernel has Landlock: writes limited twice
};

/// bubblewrap's arguments (without the program itself and without `--seccomp FD`, which the
/// helper adds), ending with `--` and the command to run inside.
std::vector<std::string> bwrap_arguments(const sandbox_policy& p, const sandbox_context& ctx,
                                         const sandbox_launch& launch,
                                         const std::vector<std::string>& command);

/// The whole command: `mcpmux-sandbox enter [--cgroup FILE]… [--files N] -- bwrap ARGS… --
/// [mcpmux-sandbox forward …] PROGRAM ARGS…`.
std::vector<std::string> sandboxed_command(const sandbox_policy& p, const sandbox_context& ctx,
                                           const sandbox_launch& launch,
                                           const std::vector<std::string>& command);

}  // namespace mcpmux
