// Time as core measures it: wall-clock Unix milliseconds for what is stored and shown, and a
// steady clock for deadlines and timers that tests can move forward.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace mcpmux {

/// Now, in Unix milliseconds.
inline std::int64_t unix_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Core's steady clock: the real steady clock plus an offset that only tests move (advance), so
/// that an in-process test can reach a deadline without waiting for it. Its timers (steady_timer,
/// core/timer.hpp) compare against this clock, so they fire when a test advances past
/// them; in production the offset stays zero and costs one relaxed load.
struct steady_clock {
  using duration = std::chrono::steady_clock::duration;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<steady_clock, duration>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    return time_point(std::chrono::steady_clock::now().time_since_epoch() +
                      duration(offset_.load(std::memory_order_relaxed)));
  }

  /// Moves the clock forward by `d` (tests only). Timers already armed notice on their event
  /// loop's next wake-up; tests/inproc's advance() makes that wake-up happen.
  static void advance(duration d) noexcept {
    offset_.fetch_add(d.count(), std::memory_order_relaxed);
  }

 private:
  static inline std::atomic<rep> offset_{0};
};

}  // namespace mcpmux
