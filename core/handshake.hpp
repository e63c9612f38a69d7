// The handshake of an upstream as a stepable machine (no I/O, time passed in): the upstream
// performs each action and feeds back what happened, until the machine says ready or fail.
//
// Legacy era (2024-11-05 … 2025-11-25): initialize → (the transport's listener) →
// notifications/initialized → tools/list → the optional lists the server declared → ready.
// Modern era (2026-07-28): server/discover → the lists, every request with its _meta.
// Detection (era = "auto"): server/discover first, bounded by a short probe timeout; an answer
// or a modern error (-32020…-32022) means modern, anything else (an error such as -32601, or
// silence) means legacy, and initialize follows on the same connection. With a cached legacy
// verdict initialize comes first, and an error to it tries server/discover once (the server
// may have moved to the modern era).
// Only initialize and tools/list can fail the start: a tools/list that answers badly leaves no
// tools, an optional list that answers badly or not at all leaves that list empty, each with
// its error for the owner to report. The handshake (initialize and tools/list) is bounded by the
// server's timeout; the optional lists share one more timeout between them, each page waiting
// at most an equal part of what is left for each list still to go.
//
#pragma once

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.hpp"
#include "core/lists.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/versions.hpp"

namespace mcpmux {

/// How the handshake finds the server's era.
enum class era_policy {
  legacy,        ///< initialize only
  modern,        ///< server/discover only
  detect,        ///< server/discover, else initialize
  legacy_first,  ///< initialize, else server/discover (a cached legacy verdict)
};

/// The `_meta` of mcpmux's own modern requests, declaring `capabilities`.
json::object modern_request_meta(json::object capabilities = {});

/// What the owner does next.
struct handshake_action {
  enum kind {
    send,           ///< send request `method` with `params`, bounded by `timeout` (none: the
                    ///< handshake's deadline bounds it); report on_reply or on_no_answer
    notify,         ///< send notification `method` with `params`; report on_done
    open_listener,  ///< tell the transport the `protocol_version` and let it open its listener,
                    ///< waiting at most `max_wait` (0 = no limit); report on_done
    wait,           ///< nothing to do until the next event
    ready,          ///< the server is ready: read the results
    fail,           ///< the start failed: `error` says why
  };
  kind what = wait;
  std::string_view method;
  json::object params;
  std::optional<std::chrono::milliseconds> timeout;
  std::string protocol_version;
  std::chrono::milliseconds max_wait{0};
  std::string error;
};

/// One list as the handshake left it.
struct list_outcome {
  bool asked = false;  ///< false: the server did not declare it (and it is not tools)
  std::vector<json::object> items;
  std::string error;  ///< why it could not be had ("" = fine)
};

class handshake {
 public:
  using clock = mcpmux::steady_clock;
  using action = handshake_action;
  /// The longest a detecting server/discover waits before the server is taken for legacy.
  static constexpr std::chrono::milliseconds probe_timeout{3000};

  /// `timeout`: the server's request timeout (0 = none); `server` names it in errors.
  handshake(std::chrono::milliseconds timeout, std::string server,
            era_policy policy = era_policy::legacy);

  action start(clock::time_point now);
  /// The answer to the last `send`.
  action on_reply(message reply, clock::time_point now);
  /// The last `send` got no answer within its timeout.
  action on_no_answer(clock::time_point now);
  /// The last `notify` or `open_listener` is done.
  action on_done(clock::time_point now);
  /// The handshake's deadline passed (the owner arms a timer for deadline()).
  action on_deadline(clock::time_point now);
  /// When the handshake (up to the end of tools/list) must be over; none without a timeout.
  std::optional<clock::time_point> deadline() const;

  /// The era found (unknown until the server answered a handshake request).
  mcp::era era() const { return era_; }
  /// True while a server/discover sent to detect the era is unanswered (a server that exits
  /// then is legacy: it did not like a request before initialize).
  bool probing() const { return phase_ == phase::discover && policy_ != era_policy::modern; }

  // What the server told (valid from its initialize or discover answer on).
  const std::string& protocol_version() const { return version_; }
  const json::object& capabilities() const { return capabilities_; }
  const std::string& instructions() const { return instructions_; }
  /// A modern server's cache hint from server/discover (ttlMs; cacheScope "private"); none
  /// for a legacy server.
  std::optional<std::int64_t> cache_ttl_ms() const { return cache_ttl_ms_; }
  bool cache_private() const { return cache_private_; }
  const std::string& server_name() const { return server_name_; }
  /// True when the server declared the capability that enables the list.
  bool offers(collection c) const;
  /// Every list, once ready.
  std::array<list_outcome, collection_count>& lists() { return lists_; }
  /// Warnings gathered on the way (skipped list items), for the owner to log; cleared.
  std::vector<std::string> take_warnings() { return std::move(warnings_); }

 private:
  enum class phase { idle, discover, initialize, listener, initialized, listing, done };
  action send_discover();
  action send_initialize();
  action discovered(message& reply, clock::time_point now);
  action initialized(message& reply, clock::time_point now);
  action start_lists(clock::time_point now);
  action ask_page(clock::time_point now);
  action list_ended(clock::time_point now);
  action failed(std::string why);

  std::chrono::milliseconds timeout_;
  std::string server_;
  era_policy policy_;
  mcp::era era_ = mcp::era::unknown;
  bool tried_discover_ = false, tried_initialize_ = false, discover_retried_ = false;
  phase phase_ = phase::idle;
  clock::time_point started_{};
  clock::time_point lists_deadline_{};
  std::string version_, instructions_, server_name_;
  std::optional<std::int64_t> cache_ttl_ms_;
  bool cache_private_ = false;
  json::object capabilities_;
  std::size_t current_ = 0;  ///< the collection being listed
  std::optional<list_pager> pager_;
  std::array<list_outcome, collection_count> lists_;
  std::vector<std::string> warnings_;
};

}  // namespace mcpmux
