// Formatting the limits: the same words in status, `mcpmux sandbox` and the kill reasons.
#include "sandbox/limits.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <vector>

namespace mcpmux {

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<const char*, 5> units = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < units.size()) {
    value /= 1024;
    ++unit;
  }
  // One decimal where it says something (1.5 GiB), none where it would read .0.
  std::string text = fmt::format("{:.1f}", value);
  if (text.ends_with(".0")) text.resize(text.size() - 2);
  return text + " " + units[unit];
}

std::string format_cpus(double cpus) {
  std::string text = fmt::format("{:.3f}", cpus);
  while (text.ends_with('0')) text.pop_back();
  if (text.ends_with('.')) text.pop_back();
  return text;
}

std::string describe(const resource_limits& limits) {
  std::vector<std::string> parts;
  if (limits.memory_max) parts.push_back("memory " + format_bytes(limits.memory_max));
  if (limits.cpu_max > 0) parts.push_back("cpu " + format_cpus(limits.cpu_max));
  if (limits.tasks_max) parts.push_back(fmt::format("tasks {}", limits.tasks_max));
  if (limits.files_max) parts.push_back(fmt::format("files {}", limits.files_max));
  return parts.empty() ? "no limits" : fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace mcpmux
