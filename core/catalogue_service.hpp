// The catalogue service: what clients see of the servers. It builds the combined lists and the
// profiles' views (their search index within) from the upstreams' lists, less what trust holds
// back (each server's lists judged against its pins when they change; the tool cache written
// with what was trusted), answers the route lookups and pages sessions ask for, and joins what
// the servers offer at initialize (capabilities, instructions).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_set>
#include <variant>
#include <vector>

#include "base/log.hpp"
#include "config/config.hpp"
#include "core/catalogue.hpp"
#include "core/profiles.hpp"
#include "core/trust.hpp"
#include "core/upstream_map.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/param_headers.hpp"

namespace mcpmux {

class state_store;
class upstream;

class catalogue_service {
 public:
  /// `cfg` and `upstreams` are the manager's (the current configuration and shared upstreams);
  /// `store` keeps pins, trust and the tool cache (null: nothing is judged or cached).
  catalogue_service(const config& cfg, const upstream_map& upstreams, state_store* store);
  catalogue_service(const catalogue_service&) = delete;
  catalogue_service& operator=(const catalogue_service&) = delete;

  /// Which lists a rebuild changed: the combined ones, and each profile's.
  struct changes {
    std::array<bool, collection_count> lists{};
    std::map<std::string, profile_set::changes> profiles;
  };
  /// Builds the lists again when a server's lists or place changed since the last build (the
  /// lists judged first); nullopt when nothing did. `settled`: every server has listed (a
  /// profile pattern that matches nothing is worth a warning then).
  std::optional<changes> rebuild(bool settled);
  /// The next rebuild builds even if no list changed (filters or profiles changed).
  void invalidate() { signature_.clear(); }
  /// The profiles of a new configuration; the names of those added, removed or changed.
  std::vector<std::string> configure_profiles(const std::vector<profile_config>& profiles);

  // Lookups, as `profile` shows things ("" = everything).
  const catalogue& exposed() const { return cat_; }
  /// Where a start from a catalogue snapshot puts the lists back.
  catalogue& exposed_for_restore() { return cat_; }
  const route* find(collection c, std::string_view exposed, std::string_view profile = {}) const;
  /// The server for a URI: an exposed resource, an `mcpmux://server/uri` alias, or the server
  /// whose template's literal prefix matches best.
  std::optional<route> route_resource(std::string_view uri, std::string_view profile = {}) const;
  /// The server for a completion reference (`ref/prompt` name or `ref/resource` template URI).
  std::optional<route> route_completion(const json::object& ref,
                                        std::string_view profile = {}) const;
  /// A page of a combined list; a cursor of an older generation of the list is an error.
  result<list_page> page(collection c, std::string_view cursor,
                         std::string_view profile = {}) const;
  /// The Mcp-Param-* headers an exposed tool's calls carry; null when none or unknown.
  std::shared_ptr<const std::vector<mcp::param_header>> tool_param_headers(
      std::string_view exposed) const;
  const profile_set& profiles() const { return profiles_; }
  /// The profile a new client gets; an error when it named one that does not exist.
  result<std::string> profile_for(const client_identity& who) const;

  /// What clients are offered at initialize: the union of what the upstreams offer.
  json::object downstream_capabilities() const;
  /// Upstream instructions joined, each under its server name, capped.
  std::string instructions() const;
  /// True when a modern server declares the extension (capabilities.extensions) in discover.
  bool offers_extension(std::string_view extension) const;

  // Trust (core/trust.hpp).
  /// What trust holds back of `server`: none when everything it offers is trusted.
  const std::vector<trust_item>& quarantined(std::string_view server) const;
  /// A definition that changed since it was trusted and is shown all the same: how, when, and
  /// why it is shown (`on_change` "warn" or "accept", or "approved"). Kept while the daemon runs.
  struct recent_change {
    change_kind why = change_kind::changed;
    std::int64_t time_ms = 0;
    std::string shown_by;
  };
  const recent_change* changed_since_trust(std::string_view server, collection c,
                                           const std::string& name) const;
  /// Whether `server` is trusted under its current configuration.
  bool trusted(std::string_view server) const;
  /// Approves `server`'s quarantined items named in `names`, or all of them with `all` (the
  /// server is trusted from then on); an item whose offered definition is not `expected[name]`
  /// (when given) is skipped. Returns {server, approved, skipped, not_held}; the next rebuild
  /// judges the server again and shows what was approved.
  result<json::value> approve(const std::string& server, const std::vector<std::string>& names,
                              bool all, const std::map<std::string, std::string>& expected);
  /// Cached tools of a server trusted under its configuration are not judged again.
  void trust_cached(upstream& up);
  /// Trust judges `server`'s lists again (a reload changed or removed it).
  void forget_trust(const std::string& server) { trust_.erase(server); }

 private:
  /// Trust's verdict on each server's lists, and what of them the tool cache holds.
  struct server_trust {
    std::uint64_t judged = 0;                     ///< the lists_version judged (0: not yet)
    std::uint64_t cached_tools = 0;               ///< the tools_version the cache holds
    std::unordered_set<std::string> cached_held;  ///< the tools the cache leaves out
    std::array<std::unordered_set<std::string>, collection_count> held;
    std::vector<trust_item> quarantined;
    std::map<std::pair<collection, std::string>, recent_change> changed;
  };
  std::shared_ptr<upstream> upstream_named(std::string_view server) const;
  std::vector<catalogue_source> sources() const;
  /// Judges the lists of servers that listed anew and keeps the tool cache of each up to date.
  void judge_lists();
  void judge(const std::string& name, upstream& up, server_trust& t);
  void store_tool_cache(upstream& up, server_trust& t);

  const config& cfg_;
  const upstream_map& upstreams_;
  state_store* store_;
  logger log_{"manager"};
  catalogue cat_;
  profile_set profiles_;
  std::unordered_set<std::string> warned_unmatched_;  ///< "profile\nsetting" warned of
  /// What the catalogue was last built from: (server, listed, lists version) and naming rules.
  std::vector<std::tuple<std::string, bool, std::uint64_t>> signature_;
  std::map<std::string, server_trust, std::less<>> trust_;
  std::unordered_set<std::string> trust_warned_;  ///< "server\nkind\nname\ndefinition" warned of
};

}  // namespace mcpmux
