// The resources a stdio server may use: memory, CPU, tasks and open files, and how they read.
#pragma once

#include <cstdint>
#include <string>

namespace mcpmux {

/// A server's resource limits; 0 is "no limit" for each.
struct resource_limits {
  std::uint64_t memory_max = 0;  ///< bytes of memory, page cache included, no swap
  double cpu_max = 0;            ///< CPUs' worth of time per period: 0.5 is half of one, 2 is two
  std::uint64_t tasks_max = 0;   ///< processes and threads together (Chromium alone uses ~120)
  std::uint64_t files_max = 0;   ///< open files per process (RLIMIT_NOFILE)
  /// Whether any limit is set.
  bool any() const { return memory_max || cpu_max > 0 || tasks_max || files_max; }
};

/// A byte count for people, in the largest binary unit that keeps it readable: "512 MiB",
/// "1.5 GiB", "100 KiB", "17 bytes".
std::string format_bytes(std::uint64_t bytes);

/// A CPU count as written in the config: "0.5", "2", "0.25".
std::string format_cpus(double cpus);

/// The limits for people: "memory 512 MiB, cpu 0.5, tasks 1024, files 8192"; a limit of 0 is
/// left out, and no limit at all reads "no limits".
std::string describe(const resource_limits& limits);

}  // namespace mcpmux
