// What this machine lets a sandbox use: bubblewrap and user namespaces, Landlock, cgroups.
// Probed once when the daemon starts; status and `mcpmux sandbox` show it.
#pragma once

#include <string>

namespace mcpmux {

/// The host's sandboxing facilities.
struct sandbox_host {
  std::string bwrap;        ///< absolute path of bubblewrap; "" when it is not installed
  bool namespaces = false;  ///< bubblewrap could create the namespaces (tried once)
  std::string problem;      ///< why servers cannot be sandboxed here, for people; "" when they can
  int landlock_abi = 0;     ///< 0: no Landlock
  /// Whether a sandbox can be built at all.
  bool usable() const { return problem.empty(); }
};

/// The host with bubblewrap at `bwrap` (found in PATH by the caller; "" when it is not
/// installed), tried once (`bwrap --unshare-all --ro-bind / / true`, bounded to a few seconds).
sandbox_host probe_sandbox_host(const std::string& bwrap);

/// The first half of the probe, without running anything: the problem that bubblewrap is
/// missing, and Landlock's ABI; `namespaces` is assumed.
sandbox_host locate_sandbox_host(const std::string& bwrap);

/// The second half: tries `bwrap` once (~10 ms); why it cannot make namespaces, or "".
std::string try_namespaces(const std::string& bwrap);

/// The Landlock ABI version the kernel offers; 0 when it has none.
int landlock_abi_version();

}  // namespace mcpmux
