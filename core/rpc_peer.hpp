// JSON-RPC over one transport: request correlation with deadlines, notifications, incoming
// dispatch.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/json_rpc.hpp"
#include "protocol/pending_table.hpp"
#include "transports/transport.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

/// What a transport is told of a request rpc_peer sends (outgoing_info): its id and method,
/// and for a 2026-07-28 request (its _meta names the version) the era's version, target and
/// `headers` (the Mcp-Param-* fields its caller worked out).
outgoing_info describe_request(std::int64_t id, std::string_view method, const json::value& params,
                               std::vector<std::pair<std::string, std::string>> headers = {});
/// The same for a notification.
outgoing_info describe_notification(std::string_view method);

/// The owner's side of an rpc_peer. Called on the io_context thread.
struct rpc_peer_handlers {
  std::function<void(message)> on_request;       ///< the peer asks us something
  std::function<void(message)> on_notification;  ///< the peer tells us something
  /// The transport ended; pending requests fail with transport_closed right after this returns.
  std::function<void(std::error_code, std::string)> on_closed;
  /// A line that is not JSON or not JSON-RPC, or an oversize line (text empty): for the log.
  std::function<void(std::string_view text, std::string_view why)> on_bad_message;
  /// An answer to a request that was already given up (cancelled, timed out): expected, ignored.
  std::function<void(std::int64_t id)> on_late_answer;
};

/// Correlates requests and responses on one connection. Request ids are this side's integers,
/// so callers never collide. Every request ends exactly once: answer, timeout, close or cancel.
class rpc_peer : public std::enable_shared_from_this<rpc_peer> {
 public:
  static std::shared_ptr<rpc_peer> create(boost::asio::io_context& io, std::shared_ptr<transport> t,
                                          rpc_peer_handlers handlers);
  virtual ~rpc_peer() = default;

  /// Begins reading.
  virtual void start() = 0;
  /// Sends a request; `done` runs once. A timeout also sends `notifications/cancelled` to the
  /// peer. Returns the wire id, or nullopt when the send failed (done has then already run).
  /// `tag`: what the request belongs to (found again by tag_of while it is pending), kept until
  /// `done` has run or the request is dropped.
  /// `headers`: the Mcp-Param-* fields of a 2026-07-28 tools/call, for a transport that sends
  /// them (the rest of what the transport is told, outgoing_info, comes from `method` and
  /// `params`; params sent as text are a legacy request's, which tells nothing more).
  virtual std::optional<std::int64_t> request(
      std::string_view method, request_params params,
      std::optional<std::chrono::milliseconds> timeout, response_handler done,
      reply_form form = reply_form::parsed, std::shared_ptr<request_tag> tag = {},
      std::vector<std::pair<std::string, std::string>> headers = {}) = 0;
  /// The id the next request gets (a call's progress token is its wire id).
  virtual std::int64_t next_id() const = 0;
  /// The tag of pending request `id` (null: none, or not pending).
  virtual request_tag* tag_of(std::int64_t id) const = 0;
  /// The tags of every pending request.
  virtual std::vector<request_tag*> tags() const = 0;
  /// Sends a notification; false when the transport refused it.
  virtual bool notify(std::string_view method, const json::value& params) = 0;
  /// Sends a serialized message as is (a response to a peer's request).
  virtual bool send_raw(std::string text) = 0;
  /// Gives up on a request: its handler is dropped without running and the peer is sent
  /// `notifications/cancelled` with `reason`.
  virtual void cancel(std::int64_t id, std::string_view reason) = 0;
  /// Moves a request's deadline to now + `timeout` (progress).
  virtual void extend(std::int64_t id, std::chrono::milliseconds timeout) = 0;
  /// Closes the transport; pending requests fail with `transport_closed`; no on_closed.
  virtual void close() = 0;
  virtual std::size_t pending() const = 0;
  /// The transport underneath (for transport-level hooks such as on_initialized).
  virtual transport& channel() = 0;
};

}  // namespace mcpmux
