// The rules of a call to an upstream, pure and with time passed in: how long a call may wait and
// run, when it is resent after a dropped connection, how far progress moves its deadline, and
// when a server that misses pings is hung. The upstream performs them with Asio timers.
#pragma once

#include <chrono>
#include <optional>

#include "base/clock.hpp"
#include "config/config.hpp"

namespace mcpmux {

class call_policy {
 public:
  using clock = mcpmux::steady_clock;
  using ms = std::chrono::milliseconds;

  /// `timeout`: per request (0 = none); `retry`: when a call is resent after a dropped connection;
  /// `extend_on_progress`: progress restarts the deadline, up to `ceiling` after the start
  /// (0 = no ceiling).
  call_policy(ms timeout, retry_mode retry, bool extend_on_progress, ms ceiling)
      : timeout_(timeout), retry_(retry), extend_(extend_on_progress), ceiling_(ceiling) {}

  /// When a call that started at `started` must have its answer; none without a timeout.
  std::optional<clock::time_point> deadline(clock::time_point started) const {
    if (timeout_.count() == 0) return std::nullopt;
    return started + timeout_;
  }
  /// The timeout of the request when it is sent at `now` (after waiting in the queue): what is
  /// left of the call's own, at least 1 ms; none without a timeout.
  std::optional<ms> send_timeout(clock::time_point started, clock::time_point now) const;
  /// True when a call still waiting for the server at `now` has run out of time.
  bool expired(clock::time_point started, clock::time_point now) const {
    return timeout_.count() > 0 && started + timeout_ <= now;
  }
  /// What is known of a call whose connection dropped before its answer.
  struct dropped_call {
    bool already_resent = false;  ///< it was resent once already
    bool server_stopped = false;  ///< the server was stopped on purpose (not a crash)
    bool reached_server = true;   ///< it was handed to the connection, so it may have run
    bool harmless_twice = false;  ///< not a tools/call, or a tool annotated read-only/idempotent
  };
  /// True when a call whose connection dropped is sent again on the next one: never twice, never
  /// after a stop; `always` resends; `safe` only a call that cannot have run or cannot harm twice.
  bool resend_after_drop(const dropped_call& d) const {
    if (d.already_resent || d.server_stopped) return false;
    switch (retry_) {
      case retry_mode::always:
        return true;
      case retry_mode::never:
        return false;
      case retry_mode::safe:
        return !d.reached_server || d.harmless_twice;
    }
    return false;
  }
  /// The new timeout of a call in flight whose server reported progress at `now`: the full
  /// timeout again, but not past the ceiling; none when progress does not extend calls.
  std::optional<ms> on_progress(clock::time_point started, clock::time_point now) const;

 private:
  ms timeout_;
  retry_mode retry_;
  bool extend_;
  ms ceiling_;
};

/// Liveness by ping: a server that misses `allowed_misses` pings in a row is hung.
class liveness {
 public:
  using ms = std::chrono::milliseconds;
  static constexpr unsigned allowed_misses = 2;

  /// `interval`: between pings (0 = no pings); `timeout`: the request timeout (0 = none).
  liveness(ms interval, ms timeout) : interval_(interval), timeout_(timeout) {}

  /// When the next ping is due after the last one ended; none without pings.
  std::optional<ms> next_ping() const {
    return interval_.count() > 0 ? std::optional<ms>(interval_) : std::nullopt;
  }
  /// How long a ping may wait for its answer: the interval, or the timeout when shorter.
  ms ping_timeout() const {
    return timeout_.count() > 0 ? std::min(timeout_, interval_) : interval_;
  }
  enum class verdict { alive, missed, hung };
  /// The ping was answered (any answer, even an error, proves the server reads).
  verdict on_answer() {
    misses_ = 0;
    return verdict::alive;
  }
  /// The ping got no answer in time.
  verdict on_no_answer() { return ++misses_ >= allowed_misses ? verdict::hung : verdict::missed; }
  unsigned misses() const { return misses_; }
  /// A new connection starts with a clean slate.
  void reset() { misses_ = 0; }

 private:
  ms interval_;
  ms timeout_;
  unsigned misses_ = 0;
};

}  // namespace mcpmux
