// Wall-clock time as the state store, status and the CLI exchange it: Unix milliseconds.
#pragma once

#include <chrono>
#include <cstdint>

namespace mcpmux {

/// Now, in Unix milliseconds.
inline std::int64_t unix_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace mcpmux
