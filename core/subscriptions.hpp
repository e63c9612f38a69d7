// Resource subscriptions, reference-counted across sessions: one upstream subscription per
// (server, URI), however many clients subscribed. Pure bookkeeping; the manager sends the
// resources/subscribe and /unsubscribe requests the table asks for.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mcpmux {

class subscription_table {
 public:
  using key = std::pair<std::string, std::string>;  ///< (server, the server's URI)
  /// How a subscribe ended: code 0, or the JSON-RPC error code and message for the client.
  using done_fn = std::function<void(int code, std::string message)>;

  enum class next {
    done,        ///< already subscribed upstream: `done` has run (success)
    ask_server,  ///< the first subscriber: send resources/subscribe, then call answered()
    wait,        ///< the server is being asked already: `done` runs with its answer
  };
  next subscribe(const key& k, std::uint64_t session, done_fn done);
  /// The server answered the subscribe for `k` (code 0 = accepted). Sessions still alive (per
  /// `alive`) become subscribers when it was accepted; every waiter hears the answer.
  void answered(const key& k, int code, const std::string& message,
                const std::function<bool(std::uint64_t)>& alive);
  /// True when `session` was the last subscriber of `k`: tell the server resources/unsubscribe.
  bool unsubscribe(const key& k, std::uint64_t session);
  /// Everything `session` is subscribed to (to drop when it leaves).
  std::vector<key> of_session(std::uint64_t session) const;
  /// The subscribers of `k`.
  std::vector<std::uint64_t> subscribers(const key& k) const;
  /// The URIs of `server` that have subscribers (subscribed again after a reconnect).
  std::vector<std::string> uris_of(const std::string& server) const;

 private:
  std::map<key, std::set<std::uint64_t>> subscribed_;
  /// Subscriptions whose resources/subscribe is in flight: who waits for its answer.
  std::map<key, std::vector<std::pair<std::uint64_t, done_fn>>> asking_;
};

}  // namespace mcpmux
