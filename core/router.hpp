// The router's table for one upstream, pure bookkeeping (the upstream does the sending):
// server→client requests (sampling, elicitation, roots): the server's id is remembered with
// the client that was asked and that client's own id, so that the server's cancellation
// reaches that client, and only for the connection the request came on.
// `Owner` is who to tell (the upstream uses std::weak_ptr<call_owner>).
#pragma once

#include <boost/json/serialize.hpp>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <unordered_map>

#include "protocol/json_rpc.hpp"

namespace mcpmux {

template <class Owner>
class request_router {
 public:
  struct entry {
    Owner owner;
    std::int64_t client_id;    ///< the request's id on the client's connection
    std::uint64_t generation;  ///< of the upstream connection the request came on
  };

  /// The server's request `server_id` was passed to a client as `client_id`. Requests of older
  /// connections are forgotten: nobody can cancel them any more.
  void remember(const json::value& server_id, Owner owner, std::int64_t client_id,
                std::uint64_t generation) {
    for (auto it = asked_.begin(); it != asked_.end();)
      it = it->second.generation != generation ? asked_.erase(it) : std::next(it);
    asked_[key(server_id)] = entry{std::move(owner), client_id, generation};
  }
  /// The request is over (answered): forgotten, if it is of `generation`.
  void forget(const json::value& server_id, std::uint64_t generation) {
    auto it = asked_.find(key(server_id));
    if (it != asked_.end() && it->second.generation == generation) asked_.erase(it);
  }
  /// The server cancelled `server_id` on connection `generation`: who to tell, under which id
  /// (and the request is forgotten); nothing for an unknown or stale request.
  std::optional<entry> take(const json::value& server_id, std::uint64_t generation) {
    auto it = asked_.find(key(server_id));
    if (it == asked_.end() || it->second.generation != generation) return std::nullopt;
    auto e = std::move(it->second);
    asked_.erase(it);
    return e;
  }
  std::size_t size() const { return asked_.size(); }

 private:
  static std::string key(const json::value& id) { return json::serialize(id); }
  std::unordered_map<std::string, entry> asked_;  ///< by serialized server id
};

}  // namespace mcpmux
