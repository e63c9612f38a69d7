// Sans-io lifecycle of an upstream with its reconnect policy: events in, the next action out.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/clock.hpp"

namespace mcpmux {

/// Where an upstream is in its life.
enum class upstream_state {
  connecting,   ///< spawning or handshaking
  ready,        ///< initialized; calls go through
  backoff,      ///< the connection ended or never came up; waiting before the next attempt
  stopped,      ///< stopped by the daemon (shutdown, reload)
  disabled,     ///< `enabled = false`
  needs_login,  ///< the server wants an OAuth login only a person can give: no attempts until
                ///< it arrives (restart)
};

std::string_view to_string(upstream_state s);

/// Reconnect policy: exponential backoff with jitter, never giving up.
struct backoff_policy {
  std::chrono::milliseconds initial{500};  ///< first delay
  std::chrono::milliseconds max{30000};    ///< cap on the delay
  double jitter = 0.2;                     ///< ± fraction applied to every delay
  std::chrono::milliseconds stable_after{
      60000};  ///< ready this long → next failure starts at `initial`
};

/// The lifecycle. The owner performs the returned action and reports what happened.
class lifecycle {
 public:
  using clock = mcpmux::steady_clock;

  enum class action {
    none,     ///< nothing to do
    connect,  ///< start a connection attempt now
    wait,     ///< arm a timer for `delay`, then call on_timer()
  };
  struct step {
    action what = action::none;
    std::chrono::milliseconds delay{0};
  };

  /// `random01` returns a uniform value in [0, 1) (injected so tests are deterministic).
  lifecycle(backoff_policy policy, std::function<double()> random01);

  step start(clock::time_point now, bool enabled);
  step on_ready(clock::time_point now);
  /// The connection ended or an attempt failed; `error` says why (kept for status).
  step on_closed(clock::time_point now, std::string error);
  /// The server refused to go on without a person's login; `error` says what to run. No timer:
  /// restart() (the login arrived) leaves this state.
  step on_needs_login(std::string error);
  /// The backoff timer fired.
  step on_timer(clock::time_point now);
  /// Reconnect now with a fresh backoff (mcpmux/restart).
  step restart(clock::time_point now);
  step stop();
  /// Replaces the policy (reload); the next delay uses it.
  void set_policy(backoff_policy p) { policy_ = p; }

  upstream_state state() const { return state_; }
  /// Consecutive failed attempts since the last stable connection (0 when none).
  unsigned attempt() const { return attempt_; }
  clock::time_point next_try() const { return next_try_; }
  const std::string& last_error() const { return last_error_; }
  clock::time_point ready_since() const { return ready_since_; }
  /// The delay before attempt `n` (1-based), without jitter.
  std::chrono::milliseconds base_delay(unsigned n) const;

 private:
  backoff_policy policy_;
  std::function<double()> random01_;
  upstream_state state_ = upstream_state::stopped;
  unsigned attempt_ = 0;
  clock::time_point next_try_{};
  clock::time_point ready_since_{};
  std::string last_error_;
};

}  // namespace mcpmux
