// The upstream lifecycle state machine and its backoff arithmetic.
#include "core/lifecycle.hpp"

#include <algorithm>
#include <cmath>

namespace mcpmux {

std::string_view to_string(upstream_state s) {
  switch (s) {
    case upstream_state::connecting:
      return "connecting";
    case upstream_state::ready:
      return "ready";
    case upstream_state::backoff:
      return "backoff";
    case upstream_state::stopped:
      return "stopped";
    case upstream_state::disabled:
      return "disabled";
    case upstream_state::needs_login:
      return "needs_login";
  }
  return "?";
}

lifecycle::lifecycle(backoff_policy policy, std::function<double()> random01)
    : policy_(policy), random01_(std::move(random01)) {}

std::chrono::milliseconds lifecycle::base_delay(unsigned n) const {
  if (n == 0) return std::chrono::milliseconds(0);
  // Doubling stops once past the cap, so large attempt counts cannot overflow.
  auto d = policy_.initial;
  for (unsigned i = 1; i < n && d < policy_.max; ++i) d *= 2;
  return std::min(d, policy_.max);
}

lifecycle::step lifecycle::start(clock::time_point, bool enabled) {
  if (!enabled) {
    state_ = upstream_state::disabled;
    return {};
  }
  if (state_ == upstream_state::connecting || state_ == upstream_state::ready) return {};
  state_ = upstream_state::connecting;
  return {action::connect};
}

lifecycle::step lifecycle::on_ready(clock::time_point now) {
  if (state_ != upstream_state::connecting) return {};
  state_ = upstream_state::ready;
  ready_since_ = now;
  last_error_.clear();
  return {};
}

lifecycle::step lifecycle::on_closed(clock::time_point now, std::string error) {
  if (state_ != upstream_state::connecting && state_ != upstream_state::ready) return {};
  // A connection that held for a while was healthy: the next failure is a fresh start.
  if (state_ == upstream_state::ready && now - ready_since_ >= policy_.stable_after) attempt_ = 0;
  ++attempt_;
  last_error_ = std::move(error);
  state_ = upstream_state::backoff;
  const auto base = static_cast<double>(base_delay(attempt_).count());
  const double factor = 1.0 + policy_.jitter * (2.0 * random01_() - 1.0);
  const auto delay = std::chrono::milliseconds(std::max<long long>(1, std::llround(base * factor)));
  next_try_ = now + delay;
  return {action::wait, delay};
}

lifecycle::step lifecycle::on_needs_login(std::string error) {
  if (state_ != upstream_state::connecting && state_ != upstream_state::ready) return {};
  last_error_ = std::move(error);
  state_ = upstream_state::needs_login;
  attempt_ = 0;
  return {};
}

lifecycle::step lifecycle::on_timer(clock::time_point) {
  if (state_ != upstream_state::backoff) return {};
  state_ = upstream_state::connecting;
  return {action::connect};
}

lifecycle::step lifecycle::restart(clock::time_point) {
  if (state_ == upstream_state::disabled) return {};
  attempt_ = 0;
  state_ = upstream_state::connecting;
  return {action::connect};
}

lifecycle::step lifecycle::stop() {
  state_ = upstream_state::stopped;
  return {};
}

}  // namespace mcpmux
