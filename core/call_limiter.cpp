// The call limiter: a sliding window of starts and a count in flight, with a queue of waiters.
#include "core/call_limiter.hpp"

#include <algorithm>

namespace mcpmux {

call_limiter::limit call_limiter::blocked(clock::time_point now) {
  while (!starts_.empty() && starts_.front() + window <= now) starts_.pop_front();
  if (per_minute_ && starts_.size() >= per_minute_) return limit::rate;
  if (concurrent_ && in_flight_ >= concurrent_) return limit::concurrency;
  return limit::none;
}

void call_limiter::start(clock::time_point now) {
  // A window is only kept when it limits: without a rate limit nothing needs the start times.
  if (per_minute_) starts_.push_back(now);
  ++in_flight_;
}

call_limiter::limit call_limiter::arrive(std::uint64_t token, clock::time_point now,
                                         std::optional<clock::time_point> deadline) {
  auto by = blocked(now);
  // In order: a newcomer never overtakes a call already waiting (it waits for what they wait for).
  if (by == limit::none && !waiting_.empty()) by = waiting_.back().by;
  if (by == limit::none) {
    start(now);
    return limit::none;
  }
  waiting_.push_back(waiter{token, deadline, by});
  return by;
}

void call_limiter::ended() {
  if (in_flight_ > 0) --in_flight_;
}

bool call_limiter::leave(std::uint64_t token) {
  auto it = std::find_if(waiting_.begin(), waiting_.end(),
                         [&](const waiter& w) { return w.token == token; });
  if (it == waiting_.end()) return false;
  waiting_.erase(it);
  return true;
}

call_limiter::step call_limiter::resume(clock::time_point now) {
  step out;
  while (!waiting_.empty()) {
    const auto by = blocked(now);
    if (by != limit::none) {
      waiting_.front().by = by;
      break;
    }
    out.started.push_back(waiting_.front().token);
    waiting_.pop_front();
    start(now);
  }
  // Those still waiting whose time is up; each says what held it (the front's reason holds all).
  const auto by = waiting_.empty() ? limit::none : waiting_.front().by;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->deadline && *it->deadline <= now) {
      out.expired.push_back({it->token, by});
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::optional<call_limiter::clock::time_point> call_limiter::next_wake(clock::time_point now) {
  if (waiting_.empty()) return std::nullopt;
  std::optional<clock::time_point> at;
  const auto sooner = [&](clock::time_point t) { at = at ? std::min(*at, t) : t; };
  if (blocked(now) == limit::rate) sooner(starts_.front() + window);
  for (const auto& w : waiting_)
    if (w.deadline) sooner(*w.deadline);
  return at;
}

std::string_view config_key(call_limiter::limit l) {
  switch (l) {
    case call_limiter::limit::rate:
      return "max_calls_per_minute";
    case call_limiter::limit::concurrency:
      return "max_concurrent_calls";
    case call_limiter::limit::none:
      break;
  }
  return "";
}

}  // namespace mcpmux
