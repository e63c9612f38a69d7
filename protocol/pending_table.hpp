// Request correlation, sans-io: ids, handlers and deadlines of requests awaiting an answer.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "base/clock.hpp"
#include "base/flat_table.hpp"
#include "protocol/json_rpc.hpp"

namespace mcpmux {

/// How a request ended: an answer (`reply`, a response or error response) or a failure (`ec`).
struct rpc_outcome {
  std::error_code ec;
  std::optional<message> reply;
  bool unsent = false;  ///< failed before it was handed to the connection: it cannot have run
};

using response_handler = std::function<void(rpc_outcome&&)>;

/// What a pending request belongs to, so that its owner can find it again by id (an upstream
/// finds the call a progress notification or a server's request belongs to). The table keeps it
/// while the request is pending, and until its handler has run: a handler may then hold it by a
/// plain pointer, small enough for std::function's own storage (no allocation a request).
class request_tag {
 protected:
  ~request_tag() = default;
};

/// Requests in flight on one connection, keyed by the integer id this side chose.
class pending_table {
 public:
  struct entry {
    std::string method;
    steady_clock::time_point started;
    steady_clock::time_point deadline;  ///< time_point::max() = none
    response_handler handler;
    bool raw_reply = false;  ///< a success response may be delivered unparsed (message::raw)
    std::shared_ptr<request_tag> tag;
  };

  /// Registers a request; returns its id (1, 2, 3, ...).
  std::int64_t add(std::string method, steady_clock::time_point now,
                   std::optional<steady_clock::duration> timeout, response_handler handler,
                   bool raw_reply = false, std::shared_ptr<request_tag> tag = {});
  /// Removes and returns the entry for `id`, if any (an answer arrived, or the caller gave up).
  std::optional<entry> take(std::int64_t id);
  /// Moves a deadline (progress extends a call); false if unknown.
  bool set_deadline(std::int64_t id, steady_clock::time_point deadline);
  /// Removes and returns every entry whose deadline is at or before `now`, earliest first.
  std::vector<std::pair<std::int64_t, entry>> take_expired(steady_clock::time_point now);
  /// Removes and returns every entry (connection closed).
  std::vector<std::pair<std::int64_t, entry>> take_all();
  /// The earliest deadline, if any request has one.
  std::optional<steady_clock::time_point> next_deadline() const;
  std::size_t size() const { return entries_.size(); }
  bool contains(std::int64_t id) const { return entries_.contains(id); }
  /// True when `id` is pending and may be answered unparsed.
  bool wants_raw(std::int64_t id) const {
    const auto* e = entries_.find(id);
    return e && e->raw_reply;
  }
  /// The tag of pending request `id`; null when it is not pending or has none.
  request_tag* tag(std::int64_t id) const {
    const auto* e = entries_.find(id);
    return e ? e->tag.get() : nullptr;
  }
  /// Every pending request's tag (those that have one).
  std::vector<request_tag*> tags() const {
    std::vector<request_tag*> out;
    for (const auto& [id, e] : entries_.entries())
      if (e.tag) out.push_back(e.tag.get());
    return out;
  }
  /// The id the next request gets.
  std::int64_t next_id() const { return next_id_; }
  /// True for an id this table handed out (answered, timed out or cancelled since, perhaps).
  bool issued(std::int64_t id) const { return id > 0 && id < next_id_; }

 private:
  using deadline_of = std::pair<steady_clock::time_point, std::int64_t>;
  /// True when `d` is no longer its request's deadline (answered, or the deadline moved).
  bool stale(const deadline_of& d) const {
    const auto* e = entries_.find(d.second);
    return !e || e->deadline != d.first;
  }
  /// Drops the stale deadlines at the heap's top.
  void prune_top() const;
  /// Adds a deadline; rebuilds the heap from the live ones when it has grown to twice them.
  void push_deadline(steady_clock::time_point deadline, std::int64_t id);

  std::int64_t next_id_ = 1;
  /// (A flat table: requests made one at a time, or a few at once, allocate nothing each.)
  flat_table<std::int64_t, entry> entries_;
  /// A min-heap of deadlines (earliest first, then by id), removed lazily: one that is stale is
  /// dropped when it reaches the top. (A set's node and rebalancing cost each call ~400
  /// instructions; a push onto the heap ~30.)
  mutable std::vector<deadline_of> deadlines_;
};

}  // namespace mcpmux
