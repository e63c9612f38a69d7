// The bridge between the eras for server→client requests: a legacy server asks its client
// (elicitation/create, sampling/createMessage, roots/list) in the middle of a call, while a
// modern (2026-07-28) client expects the call's answer to say "input required" and retries it
// with the answers (multi round-trip requests, MRTR).
//
// A modern client's call (core/call.hpp) is the owner of the server's requests at the upstream.
// When the server asks, the call answers its client at once with resultType "input_required", the
// server's request under a key of ours, and a requestState; the upstream call stays in flight. The
// state names the parked call in the daemon-wide mrtr_registry: 128 random bits, single use,
// expiring — nothing the client could forge or alter (an unknown state is refused, a used one is
// gone). The retry, on any connection, takes the call back: its inputResponses answer the server's
// requests, and the call goes on; the server's final answer (or its next question) goes to the
// retry's id.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/clock.hpp"

namespace mcpmux {

class call;

/// Calls waiting for their client's retry, by requestState.
class mrtr_registry {
 public:
  using clock = mcpmux::steady_clock;
  /// The most calls parked at once; beyond it the oldest is abandoned.
  static constexpr std::size_t max_parked = 4096;
  explicit mrtr_registry(std::chrono::milliseconds ttl = std::chrono::minutes(10)) : ttl_(ttl) {}

  /// Parks `c`; returns the requestState that takes it back.
  std::string park(std::shared_ptr<call> c, clock::time_point now);
  /// The call parked under `state` (removed: a state works once); nullptr when the state is
  /// unknown, expired or used.
  std::shared_ptr<call> take(std::string_view state, clock::time_point now);
  /// True when `state` has the form of ours (else it may be a modern server's own state).
  static bool ours(std::string_view state);
  /// Abandons calls parked longer than the ttl.
  void sweep(clock::time_point now);
  std::size_t parked() const { return parked_.size(); }
  /// Abandons every parked call (daemon stopping).
  void clear();

 private:
  struct entry {
    std::shared_ptr<call> held;
    clock::time_point expires;
  };
  std::chrono::milliseconds ttl_;
  std::unordered_map<std::string, entry> parked_;
};

}  // namespace mcpmux
