// The rules of a call to an upstream, pure and with time passed in: how long a call may wait and
// run, when it is resent after a dropped connection, how far progress moves its deadline, and
// when a server that misses pings is hung. The upstream performs them with Asio timers.
#pragma once

#include <chrono>
#include <optional>

namespace mcpmux {

class call_policy {
 public:
  using clock = std::chrono::steady_clock;
  using ms = std::chrono::milliseconds;

  /// `timeout`: per request (0 = none); `retry`: resend once after a dropped connection;
  /// `extend_on_progress`: progress restarts the deadline, up to `ceiling` after the start
  /// (0 = no ceiling).
  call_policy(ms timeout, bool retry, bool extend_on_progress, ms ceiling)
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
  /// True when a call whose connection dropped is sent again on the next one: once, with
  /// retries on, and not when the server was stopped.
  bool resend_after_drop(bool already_resent, bool server_stopped) const {
    return retry_ && !already_resent && !server_stopped;
  }
  /// The new timeout of a call in flight whose server reported progress at `now`: the full
  /// timeout again, but not past the ceiling; none when progress does not extend calls.
  std::optional<ms> on_progress(clock::time_point started, clock::time_point now) const;

 private:
  ms timeout_;
  bool retry_;
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
