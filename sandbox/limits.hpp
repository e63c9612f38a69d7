// The resource limits of a sandboxed server.
#pragma once

#include <cstdint>

namespace mcpmux {

/// 0 = no limit. `cpu_max` in CPUs (0.5, 2).
struct resource_limits {
  std::uint64_t memory_max = 0;
  double cpu_max = 0;
  std::uint64_t tasks_max = 0;
  std::uint64_t files_max = 0;
};

}  // namespace mcpmux
