// What the upstream's translation units share; included by core/upstream*.cpp only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <string>

#include "core/timer.hpp"
#include "core/upstream.hpp"

namespace mcpmux {

struct upstream::timer_holder {
  explicit timer_holder(boost::asio::io_context& io)
      : handshake(io), queue(io), backoff(io), ping(io), listen(io) {}
  steady_timer handshake;  ///< bounds spawn + initialize + tools/list
  steady_timer queue;      ///< deadline of the oldest call waiting for ready
  steady_timer backoff;    ///< next reconnect attempt
  steady_timer ping;       ///< next liveness ping
  steady_timer listen;     ///< reopening a listen stream the server ended
};

/// A new version for an upstream's lists: unique across upstream objects, so a server replaced
/// by reload never looks unchanged to the manager.
std::uint64_t new_lists_version();

/// A synthesized error reply, so that callers see every failure the same way.
rpc_outcome error_reply(int code, std::string text);

}  // namespace mcpmux
