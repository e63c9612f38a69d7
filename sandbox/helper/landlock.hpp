// Landlock as the second layer under bubblewrap: inside the sandbox, before the server runs,
// writes are limited to the paths the sandbox made writable. Should a mount ever be undone from
// inside, the kernel still refuses a write elsewhere.
#pragma once

#include <string>
#include <vector>

namespace mcpmux {

/// Restricts this process and what it execs to writing beneath `writable` (reading and
/// executing stay as the mounts allow). Returns the Landlock ABI used, 0 when the kernel has
/// none (nothing done), -1 with `error` set on a failure.
int restrict_writes(const std::vector<std::string>& writable, std::string& error);

}  // namespace mcpmux
