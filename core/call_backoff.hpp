// The calls' error back-off, pure and with time passed in: a server whose calls keep failing
// (errors and timeouts, not a tool's own isError) gets fewer of them. After `failures` in a row
// its calls fail at once for a pause (1 s, doubling up to 60 s); when the pause is over one call
// goes through as a probe: a success ends the back-off, a failure starts a longer pause. The
// connection's own reconnect back-off is lifecycle's; this one is about calls on a live (or
// seemingly live) connection, such as a remote endpoint that answers 500 to everything.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "base/clock.hpp"

namespace mcpmux {

class call_backoff {
 public:
  using clock = steady_clock;
  struct policy {
    unsigned failures = 5;                        ///< failed calls in a row before the first pause
    std::chrono::milliseconds first_pause{1000};  ///< doubled after each failed probe
    std::chrono::milliseconds max_pause{60000};
  };

  /// Whether a call may go to the server now.
  struct verdict {
    bool go = true;
    bool probe = false;  ///< it goes as the probe after a pause
    /// Refused: until when calls fail at once (for the message; the probe's turn after it).
    clock::time_point until{};
  };

  call_backoff() = default;
  explicit call_backoff(policy p) : policy_(p) {}

  /// A call asks to go at `now`.
  verdict admit(clock::time_point now);
  /// A call the server answered (a tool error included): the back-off is over.
  void succeeded();
  /// A call that failed at the server (an error, a timeout, the connection lost) at `now`.
  void failed(clock::time_point now);

  unsigned failures_in_row() const { return failures_; }
  /// The pause in force (none: calls go).
  std::optional<clock::time_point> paused_until() const { return until_; }

 private:
  policy policy_;
  unsigned failures_ = 0;
  std::chrono::milliseconds pause_{0};      ///< the last pause (0: none yet)
  std::optional<clock::time_point> until_;  ///< calls fail at once until then
  /// A probe went at this time and has not come back: others wait for its outcome until
  /// another pause has passed (a probe that never ends, cancelled say, does not stall the rest).
  std::optional<clock::time_point> probe_since_;
};

}  // namespace mcpmux
