// Limits against runaway loops, pure and with time passed in: at most `per_minute` calls started
// in any 60 s (a sliding window: the start times of the last minute are kept, so a burst is
// never let through twice at a window's edge) and at most `concurrent` in flight. A call that may
// not start waits its turn, first come first served, until its deadline; the owner performs
// what this says with one timer (next_wake) and tells it of every end of a started call.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <vector>

#include "base/clock.hpp"

namespace mcpmux {

class call_limiter {
 public:
  using clock = steady_clock;
  static constexpr std::chrono::seconds window{60};

  /// What holds a call back.
  enum class limit {
    none,         ///< nothing: it may start
    rate,         ///< `max_calls_per_minute`: the last minute's starts are used up
    concurrency,  ///< `max_concurrent_calls`: that many are in flight
  };
  /// A waiting call whose deadline passed, and the limit that held it last.
  struct timed_out {
    std::uint64_t token;
    limit by;
  };
  /// What a step decided: the calls that start now (in order) and those that ran out of time.
  struct step {
    std::vector<std::uint64_t> started;
    std::vector<timed_out> expired;
  };

  /// 0 for either: no such limit.
  call_limiter(std::uint32_t per_minute, std::uint32_t concurrent)
      : per_minute_(per_minute), concurrent_(concurrent) {}

  std::uint32_t per_minute() const { return per_minute_; }
  std::uint32_t concurrent() const { return concurrent_; }

  /// A call asks to start at `now`: none when it starts (it is counted in flight); else the
  /// limit that holds it, and it waits behind those already waiting until `deadline` (none: no
  /// deadline).
  limit arrive(std::uint64_t token, clock::time_point now,
               std::optional<clock::time_point> deadline);
  /// A started call ended (answered, failed, cancelled): its place in flight is free.
  void ended();
  /// A waiting call gave up (its caller cancelled it); false when it was not waiting.
  bool leave(std::uint64_t token);
  /// Starts what may start at `now`, in order, and takes out the waiting calls out of time.
  step resume(clock::time_point now);
  /// When resume() has something to do again without an end: the window frees a start or a
  /// waiting call's deadline comes. None when nothing waits.
  std::optional<clock::time_point> next_wake(clock::time_point now);

  std::size_t waiting() const { return waiting_.size(); }
  std::uint32_t in_flight() const { return in_flight_; }

 private:
  struct waiter {
    std::uint64_t token;
    std::optional<clock::time_point> deadline;
    limit by;
  };
  /// What holds the next call back at `now` (the window pruned first).
  limit blocked(clock::time_point now);
  void start(clock::time_point now);

  std::uint32_t per_minute_, concurrent_;
  std::uint32_t in_flight_ = 0;
  std::deque<clock::time_point> starts_;  ///< of the last minute, oldest first
  std::deque<waiter> waiting_;
};

/// The config key of a limit, for errors and metrics ("max_calls_per_minute").
std::string_view config_key(call_limiter::limit l);

}  // namespace mcpmux
