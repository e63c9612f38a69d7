// The router's tables for one upstream, pure bookkeeping (the upstream does the sending):
//  - progress tokens: a client's progressToken is replaced by one unique on this upstream, so
//    two clients' tokens never collide, and mapped back when the server reports progress;
//  - server→client requests (sampling, elicitation, roots): the server's id is remembered with
//    the client that was asked and that client's own id, so that the server's cancellation
//    reaches that client, and only for the connection the request came on.
// `Owner` is who to tell (the upstream uses std::weak_ptr<call_owner>).
#pragma once

#include <boost/json/serialize.hpp>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/protocol/json_rpc.hpp"

namespace mcpmux {

template <class Owner>
class progress_router {
 public:
  struct entry {
    Owner owner;
    json::value client_token;
    std::uint64_t call;  ///< the call it belongs to (its deadline moves with progress)
  };

  /// Replaces `params._meta.progressToken` (when there is one) by a fresh token of this upstream
  /// and remembers where it came from. Returns the new token, or nothing when there was none.
  std::optional<std::int64_t> rewrite(json::value& params, Owner owner, std::uint64_t call) {
    auto* p = params.if_object();
    auto* meta = p ? p->if_contains("_meta") : nullptr;
    auto* tok =
        meta && meta->is_object() ? meta->get_object().if_contains("progressToken") : nullptr;
    if (!tok) return std::nullopt;
    const auto mine = next_++;
    routes_.emplace(mine, entry{std::move(owner), *tok, call});
    *tok = mine;
    return mine;
  }
  /// Where the server's progress with `server_token` goes; nullptr for a token it never got.
  const entry* find(const json::value& server_token) const {
    const auto* n = server_token.if_int64();
    auto it = n ? routes_.find(*n) : routes_.end();
    return it == routes_.end() ? nullptr : &it->second;
  }
  /// The call ended: its token is forgotten.
  void release(std::int64_t token) { routes_.erase(token); }
  std::size_t size() const { return routes_.size(); }

 private:
  std::int64_t next_ = 1;
  std::unordered_map<std::int64_t, entry> routes_;
};

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
