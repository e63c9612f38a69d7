// The calls waiting for a server to become ready, pure and with time passed in: kept in the
// order they started (a call resent after a dropped connection goes back to its place), so the
// front always holds the nearest deadline. The upstream performs what it says with one Asio
// timer; the rules of a single call (deadlines, resend once, progress) are call_policy's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "core/call_policy.hpp"

namespace mcpmux {

template <class Call>
class call_queue {
 public:
  using clock = call_policy::clock;
  struct entry {
    std::uint64_t token;
    clock::time_point started;
    Call call;
  };

  /// Adds a call at its place by start time (after those that started at the same time).
  void push(std::uint64_t token, clock::time_point started, Call call) {
    auto pos = std::find_if(entries_.begin(), entries_.end(),
                            [&](const entry& e) { return e.started > started; });
    entries_.insert(pos, entry{token, started, std::move(call)});
  }

  /// Takes a call out (it was cancelled); none when it is not waiting here.
  std::optional<Call> remove(std::uint64_t token) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const entry& e) { return e.token == token; });
    if (it == entries_.end()) return std::nullopt;
    Call c = std::move(it->call);
    entries_.erase(it);
    return c;
  }

  /// The oldest call, taken out to be sent; none when the queue is empty.
  std::optional<entry> pop() {
    if (entries_.empty()) return std::nullopt;
    entry e = std::move(entries_.front());
    entries_.pop_front();
    return e;
  }

  /// The calls that ran out of time at `now` under `rules`, taken out, oldest first.
  std::vector<entry> expire(const call_policy& rules, clock::time_point now) {
    std::vector<entry> out;
    while (!entries_.empty() && rules.expired(entries_.front().started, now)) {
      out.push_back(std::move(entries_.front()));
      entries_.pop_front();
    }
    return out;
  }

  /// When the next call runs out of time (the moment to call expire() again); none when the
  /// queue is empty or calls have no timeout.
  std::optional<clock::time_point> next_deadline(const call_policy& rules) const {
    if (entries_.empty()) return std::nullopt;
    return rules.deadline(entries_.front().started);
  }

  /// Every call, taken out (the server was stopped).
  std::deque<entry> take_all() { return std::exchange(entries_, {}); }

  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }

 private:
  std::deque<entry> entries_;
};

}  // namespace mcpmux
