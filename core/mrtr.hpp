// The bridge between the eras for server→client requests: a legacy server asks its client
// (elicitation/create, sampling/createMessage, roots/list) in the middle of a call, while a
// modern (2026-07-28) client expects the call's answer to say "input required" and retries it
// with the answers (multi round-trip requests, MRTR).
//
// A modern client's call is a bridged_call, the call's owner at the upstream. When the server
// asks, the call answers its client at once with resultType "input_required", the server's
// request under a key of ours, and a requestState; the upstream call stays in flight. The state
// names the parked call in the daemon-wide mrtr_registry: 128 random bits, single use, expiring —
// nothing the client could forge or alter (an unknown state is refused, a used one is gone).
// The retry, on any connection, takes the call back: its inputResponses answer the server's
// requests, and the call goes on; the server's final answer (or its next question) goes to the
// retry's id.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/protocol/json_rpc.hpp"
#include "core/protocol/pending_table.hpp"
#include "core/upstream.hpp"

namespace mcpmux {

/// Where a bridged call answers: the session whose request it currently serves.
class call_sink {
 public:
  virtual ~call_sink() = default;
  /// The server's final answer to the call (of `method`), for the client request `client_id`.
  virtual void call_answered(const json::value& client_id, std::string_view method,
                             rpc_outcome out) = 0;
  /// The call needs input: `result` is the input_required result to send for `client_id`.
  virtual void call_needs_input(const json::value& client_id, json::object result) = 0;
  /// A notifications/progress of the call (params carry the client's token).
  virtual void call_progress(const json::object& params) = 0;
};

class mrtr_registry;

class bridged_call : public call_owner, public std::enable_shared_from_this<bridged_call> {
 public:
  /// `method` and `name` (tool or prompt name, or resource URI) bind a retry to the same
  /// request; `capabilities` are the client's, declared with the request.
  bridged_call(mrtr_registry& registry, std::string method, std::string name,
               json::object capabilities);

  /// The request that now waits for this call's answer.
  void attach(std::weak_ptr<call_sink> sink, json::value client_id);
  /// The upstream call (for cancel and abandon).
  void bind(std::weak_ptr<upstream> up, std::uint64_t token);
  const std::weak_ptr<upstream>& upstream_ref() const { return up_; }
  std::uint64_t token() const { return token_; }
  bool same_request(std::string_view method, std::string_view name) const {
    return method == method_ && name == name_;
  }

  /// The upstream call ended.
  void finish(rpc_outcome out);
  /// A retry answers the server's questions (`responses`: inputResponses, may be null); keys
  /// that no question waits for, and answers that are not objects, are ignored (a question left
  /// open is asked again). Then the call goes on for the attached request.
  void resume(const json::object* responses);
  /// Gives up (expired while parked): the server's questions fail, the upstream call is
  /// cancelled.
  void abandon(std::string_view why);

  // call_owner
  void on_progress(const json::object& params) override;
  bool client_supports(std::string_view capability) const override;
  bool takes_input_required() const override { return true; }
  std::int64_t ask_client(std::string_view method, const json::value& params,
                          response_handler done) override;
  void cancel_ask(std::int64_t id, std::string_view reason) override;

 private:
  struct question {
    std::string method;
    json::value params;
    response_handler done;
  };
  /// Sends input_required with every open question to the attached request and parks.
  void ask_attached();

  mrtr_registry& registry_;
  std::string method_, name_;
  json::object capabilities_;
  std::weak_ptr<call_sink> sink_;
  json::value client_id_;  ///< null while parked
  std::weak_ptr<upstream> up_;
  std::uint64_t token_ = 0;
  std::map<std::int64_t, question> questions_;  ///< by our key number ("q<N>")
  std::int64_t next_key_ = 1;
  std::optional<rpc_outcome> held_;  ///< the final answer, come while parked
};

/// Calls waiting for their client's retry, by requestState.
class mrtr_registry {
 public:
  using clock = mcpmux::steady_clock;
  /// The most calls parked at once; beyond it the oldest is abandoned.
  static constexpr std::size_t max_parked = 4096;
  explicit mrtr_registry(std::chrono::milliseconds ttl = std::chrono::minutes(10)) : ttl_(ttl) {}

  /// Parks `call`; returns the requestState that takes it back.
  std::string park(std::shared_ptr<bridged_call> call, clock::time_point now);
  /// The call parked under `state` (removed: a state works once); nullptr when the state is
  /// unknown, expired or used.
  std::shared_ptr<bridged_call> take(std::string_view state, clock::time_point now);
  /// True when `state` has the form of ours (else it may be a modern server's own state).
  static bool ours(std::string_view state);
  /// Abandons calls parked longer than the ttl.
  void sweep(clock::time_point now);
  std::size_t parked() const { return parked_.size(); }
  /// Abandons every parked call (daemon stopping).
  void clear();

 private:
  struct entry {
    std::shared_ptr<bridged_call> call;
    clock::time_point expires;
  };
  std::chrono::milliseconds ttl_;
  std::unordered_map<std::string, entry> parked_;
};

}  // namespace mcpmux
